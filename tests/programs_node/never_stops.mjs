// Bug: a reply without calls is asked again, forever.
import OpenAI from "openai";
import { CHAT_TOOLS, MODEL, PROMPT, weather } from "./weather.mjs";

const client = new OpenAI();
const messages = [{ role: "user", content: PROMPT }];
for (;;) {
  const completion = await client.chat.completions.create({ model: MODEL, messages, tools: CHAT_TOOLS });
  const message = completion.choices[0].message;
  for (const call of message.tool_calls ?? []) {
    if (call === message.tool_calls[0]) messages.push(message);
    messages.push({ role: "tool", tool_call_id: call.id, content: weather(call.function.arguments) });
  }
}
