"""Small agents on the frameworks sim's users build on, each with one tool (the framework guide,
docs/frameworks.md, shows each run four ways)."""
