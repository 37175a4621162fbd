// A careful tool loop over the Responses API, chained with previous_response_id: every call answered,
// an incomplete response ends the run, a response without calls is the answer.
import OpenAI from "openai";
import { MAX_TURNS, MODEL, PROMPT, RESPONSES_TOOLS, weather } from "./weather.mjs";

const client = new OpenAI();
let response = await client.responses.create({ model: MODEL, input: PROMPT, tools: RESPONSES_TOOLS });
for (let turn = 0; turn < MAX_TURNS; turn++) {
  if (response.status === "incomplete") {
    console.log(`stopped: ${response.incomplete_details?.reason}`);
    break;
  }
  const calls = response.output.filter((item) => item.type === "function_call");
  if (calls.length === 0) {
    console.log(response.output_text);
    break;
  }
  const input = calls.map((call) => ({ type: "function_call_output", call_id: call.call_id, output: weather(call.arguments) }));
  response = await client.responses.create({
    model: MODEL,
    previous_response_id: response.id,
    input,
    tools: RESPONSES_TOOLS,
  });
}
