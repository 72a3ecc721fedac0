"""What the built site offers readers beyond the pages' text."""
