// A careful tool loop over Chat Completions: every call answered (a mistake is a result), a cut or
// filtered reply or a refusal ends the run, a text answer is the end.
import OpenAI from "openai";
import { CHAT_TOOLS, MAX_TURNS, MODEL, PROMPT, weather } from "./weather.mjs";

const client = new OpenAI();
const messages = [{ role: "user", content: PROMPT }];
for (let turn = 0; turn < MAX_TURNS; turn++) {
  const completion = await client.chat.completions.create({ model: MODEL, messages, tools: CHAT_TOOLS });
  const choice = completion.choices[0];
  if (choice.finish_reason === "length" || choice.finish_reason === "content_filter" || choice.message.refusal) {
    console.log(`stopped: ${choice.finish_reason}`);
    break;
  }
  messages.push(choice.message);
  const calls = choice.message.tool_calls ?? [];
  if (calls.length === 0) {
    console.log(choice.message.content ?? "");
    break;
  }
  for (const call of calls) {
    const content = call.type === "function" ? weather(call.function.arguments) : "error: not a function";
    messages.push({ role: "tool", tool_call_id: call.id, content });
  }
}
