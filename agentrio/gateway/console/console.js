// session/prompt
