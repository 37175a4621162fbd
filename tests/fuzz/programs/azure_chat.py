"""An Azure OpenAI program: an `AzureOpenAI()` client built from the environment (AZURE_OPENAI_ENDPOINT,
AZURE_OPENAI_API_KEY; its API version given), one Chat Completions request to a deployment, its answer
printed. An error answer ends it with exit code 1 (the SDK's exception), as a short script does."""

from __future__ import annotations

from openai import AzureOpenAI

client = AzureOpenAI(api_version="2024-10-21", max_retries=0)
reply = client.chat.completions.create(
    model="my-deployment", messages=[{"role": "user", "content": "Say hello."}]
)
print(reply.choices[0].message.content)
