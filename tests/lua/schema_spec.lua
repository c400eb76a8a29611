-- lib/schema.lua: the JSON Schema subset the tool schemas use — every check names the field it
-- refused and why, empty tables count as arrays or objects as the schema says, and conform marks
-- the arrays so they encode as [] again.
local json = require "rmcp.lib.json"
local schema = require "rmcp.lib.schema"

local tool = {
  type = "object", additionalProperties = false, required = { "task" },
  properties = {
    task = { type = "string", minLength = 1 },
    mode = { type = "string", enum = { "a", "b" } },
    n = { type = "integer", minimum = 0, maximum = 10 },
    x = { type = "number" },
    ids = { type = "array", minItems = 1, items = { type = "string" } },
    id = { type = { "integer", "string" } },
    nested = { type = "object", properties = { flag = { type = "boolean" } } },
  },
}

-- The error message validating value gives, or nil when it passes.
local function why(value)
  local ok, err = schema.validate(tool, value)
  if ok then return nil end
  return err
end

test("valid arguments pass, with integers given as floats and empty tables where arrays or objects go", function(t)
  t.eq(why({ task = "x" }), nil)
  t.eq(why({ task = "x", mode = "b", n = 3.0, x = 1.5, ids = { "a" }, id = "q", nested = {} }), nil)
  t.eq(why({ task = "x", id = 7, nested = { flag = true } }), nil)
end)

test("each refusal names the field and says what was expected", function(t)
  t.eq(why({}), "missing required argument task")
  t.eq(why({ task = "" }), "task must not be empty")
  t.eq(why({ task = 5 }), "task must be string, got 5")
  t.eq(why({ task = "x", mode = "c" }), 'mode must be one of a, b, got "c"')
  t.eq(why({ task = "x", n = 1.5 }), "n must be integer, got 1.5")
  t.eq(why({ task = "x", n = 11 }), "n must be at most 10, got 11")
  t.eq(why({ task = "x", n = -1 }), "n must be at least 0, got -1")
  t.eq(why({ task = "x", ids = {} }), "ids needs at least 1 item(s)")
  t.eq(why({ task = "x", ids = { "a", 2 } }), "ids[1] must be string, got 2")
  t.eq(why({ task = "x", id = true }), "id must be integer or string, got true")
  t.eq(why({ task = "x", nested = { flag = "yes" } }), 'nested.flag must be boolean, got "yes"')
  t.eq(why({ task = "x", colour = 1 }), "unknown argument colour (expected one of: id, ids, mode, n, nested, task, x)")
  t.eq(why({ task = "x", ids = { k = 1 } }), "ids must be array, got an object")
  -- several bad arguments: the first by name is named, whatever the table's order
  local bad = { task = "x", zeta = 1, alpha = 2, n = "q", mode = 3 }
  for _ = 1, 5 do
    t.eq(why(bad), "unknown argument alpha (expected one of: id, ids, mode, n, nested, task, x)")
    bad.alpha = nil
    t.eq(why(bad), "mode must be string, got 3")
    bad.alpha, bad["zz" .. _] = 2, 0 -- rehash: another order
  end
end)

test("json_type tells arrays, objects and empty tables apart", function(t)
  t.eq(schema.json_type({}), "empty")
  t.eq(schema.json_type(json.array()), "array")
  t.eq(schema.json_type({ 1, 2 }), "array")
  t.eq(schema.json_type({ a = 1 }), "object")
  t.eq(schema.json_type({ 1, a = 1 }), "object")
  t.eq(schema.json_type(json.null), "null")
  t.eq(schema.json_type(3.0), "integer")
end)

test("conform marks empty tables as arrays where the schema says array; drop_nulls removes nulls", function(t)
  local v = { task = "x", ids = {}, nested = {} }
  schema.conform(tool, v)
  t.eq(json.encode(v.ids), "[]")
  t.eq(json.encode(v.nested), "{}")
  local args = schema.drop_nulls({ task = "x", mode = json.null })
  t.eq(args, { task = "x" })
end)
