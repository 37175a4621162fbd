// A careful tool loop over Chat Completions: every call answered (a mistake is a result), a cut or
// filtered reply or a refusal ends the run, a text answer is the end. `--stream` streams each reply
// (the SDK's stream helper assembles it).
import OpenAI from "openai";
import { CHAT_TOOLS, MAX_TURNS, MODEL, PROMPT, weather } from "./weather.mjs";

const client = new OpenAI();
const streamed = process.argv.includes("--stream");
const messages = [{ role: "user", content: PROMPT }];

async function ask() {
  const body = { model: MODEL, messages, tools: CHAT_TOOLS };
  return streamed ? client.chat.completions.stream(body).finalChatCompletion() : client.chat.completions.create(body);
}

for (let turn = 0; turn < MAX_TURNS; turn++) {
  const choice = (await ask()).choices[0];
  if (choice.finish_reason === "length" || choice.finish_reason === "content_filter" || choice.message.refusal) {
    console.log(`stopped: ${choice.finish_reason}`);
    break;
  }
  const calls = choice.message.tool_calls ?? [];
  messages.push({
    role: "assistant",
    content: choice.message.content,
    ...(calls.length ? { tool_calls: calls.map(({ id, type, function: { name, arguments: text } }) => ({ id, type, function: { name, arguments: text } })) } : {}),
  });
  if (calls.length === 0) {
    console.log(choice.message.content ?? "");
    break;
  }
  for (const call of calls) {
    const content = call.type === "function" ? weather(call.function.arguments) : "error: not a function";
    messages.push({ role: "tool", tool_call_id: call.id, content });
  }
}
