"""Small agents on the frameworks sim's users build on, each with one tool (see the README's guide)."""
