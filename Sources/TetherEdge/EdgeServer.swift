// The reference edge server: sans-IO server logic, UDP loop, tokens.
