"""The pure core of sim: messages, the model boundary, tools, approval, commands and the loop."""
