// Bug: asks for a strict JSON forecast and takes any reply without calls for the finished answer, one cut
// at the token limit (`finish_reason: "length"`) too, so it parses JSON that ends halfway.
import OpenAI from "openai";
import { CHAT_TOOLS, MAX_TURNS, MODEL, PROMPT, weather } from "./weather.mjs";

const FORECAST = {
  type: "json_schema",
  json_schema: {
    name: "forecast",
    strict: true,
    schema: {
      type: "object",
      properties: { summary: { type: "string" } },
      required: ["summary"],
      additionalProperties: false,
    },
  },
};
const client = new OpenAI();
const messages = [{ role: "user", content: PROMPT }];
for (let turn = 0; turn < MAX_TURNS; turn++) {
  const completion = await client.chat.completions.create({
    model: MODEL,
    messages,
    tools: CHAT_TOOLS,
    response_format: FORECAST,
  });
  const choice = completion.choices[0];
  if (choice.finish_reason === "content_filter" || choice.message.refusal) break;
  messages.push(choice.message);
  const calls = choice.message.tool_calls ?? [];
  if (calls.length === 0) {
    console.log(JSON.parse(choice.message.content ?? "").summary);
    break;
  }
  for (const call of calls) {
    messages.push({ role: "tool", tool_call_id: call.id, content: weather(call.function.arguments) });
  }
}
