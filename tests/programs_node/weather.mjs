// The tool the loops offer, and how each reads a call's arguments: with care (a mistake is a result).
export const PARAMETERS = {
  type: "object",
  properties: { city: { type: "string" } },
  required: ["city"],
};
export const CHAT_TOOLS = [
  { type: "function", function: { name: "get_weather", description: "The weather in a city.", parameters: PARAMETERS } },
];
export const RESPONSES_TOOLS = [
  { type: "function", name: "get_weather", description: "The weather in a city.", parameters: PARAMETERS },
];
export const PROMPT = "What is the weather in Paris?";
export const MODEL = process.env.OPENAI_MODEL ?? "gpt-4.1-mini";
export const MAX_TURNS = 8;

export function weather(text) {
  let asked;
  try {
    asked = JSON.parse(text);
  } catch {
    return "error: the arguments are not JSON";
  }
  if (asked === null || typeof asked !== "object" || typeof asked.city !== "string") {
    return "error: the arguments must be an object with a city";
  }
  return `${asked.city}: sunny`;
}
