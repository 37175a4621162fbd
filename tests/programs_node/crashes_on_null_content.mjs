// Bug: logs each reply's text as it comes, trimmed; a reply that only calls tools has `content: null`.
import OpenAI from "openai";
import { CHAT_TOOLS, MAX_TURNS, MODEL, PROMPT, weather } from "./weather.mjs";

const client = new OpenAI();
const messages = [{ role: "user", content: PROMPT }];
for (let turn = 0; turn < MAX_TURNS; turn++) {
  const completion = await client.chat.completions.create({ model: MODEL, messages, tools: CHAT_TOOLS });
  const choice = completion.choices[0];
  if (choice.finish_reason === "length" || choice.finish_reason === "content_filter" || choice.message.refusal) break;
  console.log(`model: ${choice.message.content.trim()}`);
  messages.push(choice.message);
  const calls = choice.message.tool_calls ?? [];
  if (calls.length === 0) break;
  for (const call of calls) {
    messages.push({ role: "tool", tool_call_id: call.id, content: weather(call.function.arguments) });
  }
}
