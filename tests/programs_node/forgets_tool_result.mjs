// Bug: answers only the first call of a reply; a reply with parallel calls leaves the others unanswered.
import OpenAI from "openai";
import { CHAT_TOOLS, MAX_TURNS, MODEL, PROMPT, weather } from "./weather.mjs";

const client = new OpenAI();
const messages = [{ role: "user", content: PROMPT }];
for (let turn = 0; turn < MAX_TURNS; turn++) {
  const completion = await client.chat.completions.create({ model: MODEL, messages, tools: CHAT_TOOLS });
  const choice = completion.choices[0];
  if (choice.finish_reason === "length" || choice.finish_reason === "content_filter" || choice.message.refusal) break;
  messages.push(choice.message);
  const [call] = choice.message.tool_calls ?? [];
  if (call === undefined) {
    console.log(choice.message.content ?? "");
    break;
  }
  messages.push({ role: "tool", tool_call_id: call.id, content: weather(call.function.arguments) });
}
