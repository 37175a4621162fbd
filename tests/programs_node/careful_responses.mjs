// A careful tool loop over the Responses API, chained with previous_response_id: every call answered,
// an incomplete response ends the run, a response without calls is the answer. `--stream` streams each
// response (the SDK's stream helper assembles it).
import OpenAI from "openai";
import { MAX_TURNS, MODEL, PROMPT, RESPONSES_TOOLS, weather } from "./weather.mjs";

const client = new OpenAI();
const streamed = process.argv.includes("--stream");

async function ask(body) {
  const asked = { model: MODEL, tools: RESPONSES_TOOLS, ...body };
  return streamed ? client.responses.stream(asked).finalResponse() : client.responses.create(asked);
}

let response = await ask({ input: PROMPT });
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
  response = await ask({ previous_response_id: response.id, input });
}
