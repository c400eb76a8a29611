-- JSON for the whole product: lua-cjson at C speed with the pass Debian's 2.1.0 lacks (core/json.c,
-- `rmcp.json`): json.array() keeps an empty array [], decoded integers stay integers, json.raw(text)
-- splices already-encoded JSON in, and every byte written is valid UTF-8 JSON. encode and decode
-- return nil, message instead of raising.
return require "rmcp.json"
