-- The JSON-RPC peer (lib/jsonrpc.lua) reads a request written id first with an integer id by one
-- pass in C (json.request) and a decode of its params alone: each such line is answered as the same request written
-- otherwise (members in another order, so the whole line is decoded) is, and a line that only looks
-- like one (a repeated member, an id with a leading zero or too long, params not an object) gets
-- the answer of the whole decode.
local jsonrpc = require "rmcp.lib.jsonrpc"
local json = require "rmcp.lib.json"

-- The lines a peer with methods echo and count sends for each of lines, in order.
local function answers(lines)
  local out = {}
  local peer = jsonrpc.new{
    send = function(line) out[#out + 1] = line end,
    methods = {
      echo = function(params, reply) reply({ got = params }) end,
      ["$/count"] = function(params, reply) reply({ n = #params }) end,
    },
  }
  for _, line in ipairs(lines) do peer:receive(line) end
  return out
end

test("a request written id first is answered as the same request decoded whole", function(t)
  local pairs_of = {
    { '{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}', '{"id":1,"method":"echo","jsonrpc":"2.0","params":{}}' },
    { '{"jsonrpc":"2.0","id":2,"method":"echo","params":{"a":[1,2.0],"b":"x","c":[]}}',
      '{"method":"echo","params":{"a":[1,2.0],"b":"x","c":[]},"jsonrpc":"2.0","id":2}' },
    { '{"jsonrpc":"2.0","id":3,"method":"$/count","params":[1,2,3]}', '{"params":[1,2,3],"jsonrpc":"2.0","id":3,"method":"$/count"}' },
    { '{"jsonrpc":"2.0","id":4,"method":"nope","params":{}}', '{"method":"nope","jsonrpc":"2.0","id":4,"params":{}}' },
  }
  for _, p in ipairs(pairs_of) do
    local fast, whole = answers({ p[1] }), answers({ p[2] })
    t.eq(#fast, 1, p[1])
    t.eq(fast[1], whole[1], p[1])
  end
  t.eq(answers({ pairs_of[1][1] })[1], '{"jsonrpc":"2.0","id":1,"result":{"got":{}}}')
end)

test("a line that only looks like one gets the answer of the whole decode", function(t)
  t.eq(answers({ '{"jsonrpc":"2.0","id":3,"method":"echo","params":{},"id":9}' })[1],
       '{"jsonrpc":"2.0","id":9,"result":{"got":{}}}', "a repeated member: the last one counts")
  t.eq(answers({ '{"jsonrpc":"2.0","id":007,"method":"echo","params":{}}' })[1],
       answers({ '{"id":007,"jsonrpc":"2.0","method":"echo","params":{}}' })[1], "a leading zero")
  local big = json.decode(answers({ '{"jsonrpc":"2.0","id":99999999999999999999,"method":"echo","params":{}}' })[1])
  t.eq(big.id, json.null, "an id past the integers")
  t.eq(big.error.code, jsonrpc.INVALID_REQUEST)
  t.eq(answers({ '{"jsonrpc":"2.0","id":5,"method":"echo","params":null}' })[1],
       '{"jsonrpc":"2.0","id":5,"result":{"got":{}}}', "null params: none")
  t.eq(json.decode(answers({ '{"jsonrpc":"2.0","id":6,"method":"echo","params":"s"}' })[1]).error.code, jsonrpc.INVALID_PARAMS)
  t.eq(answers({ '{"jsonrpc":"2.0","id":7,"method":"echo","params":{}} ' })[1],
       '{"jsonrpc":"2.0","id":7,"result":{"got":{}}}', "a blank after the object")
  t.eq(answers({ '{"jsonrpc":"2.0","id":8,"method":"echo","params":{"a":1}' })[1]:match('"id":null,"error"'),
       '"id":null,"error"', "an unclosed object is a parse error")
  t.eq(answers({ '{"jsonrpc":"2.0","id":3,"method":"echo","params":{}\0\0,"id":9}' })[1]:match('"id":null,"error"'),
       '"id":null,"error"', "NUL bytes after the params (where cjson stops reading): a parse error")
end)

test("a reply answers once; one its handler keeps can be handed over by its id (reply_id, reply_to)", function(t)
  local out, kept = {}, {}
  local peer = jsonrpc.new{
    send = function(line) out[#out + 1] = json.decode(line) end,
    methods = {
      now = function(_, reply)
        t.eq(reply({ ok = true }), true)
        t.eq(reply({ ok = false }), false, "a second answer is not sent")
      end,
      keep = function(_, reply) kept[#kept + 1] = reply end,
    },
  }
  peer:receive('{"jsonrpc":"2.0","id":1,"method":"now","params":{}}')
  peer:receive('{"jsonrpc":"2.0","id":"a\\"b","method":"keep","params":{}}')
  peer:receive('{"jsonrpc":"2.0","id":3,"method":"keep","params":{}}')
  t.eq(out, { { jsonrpc = "2.0", id = 1, result = { ok = true } } })
  t.eq(peer:unanswered(), 2)
  t.eq({ jsonrpc.reply_id(kept[1]), jsonrpc.reply_id(kept[2]) }, { 'a"b', 3 }, "the kept replies' ids")
  kept[2](nil, jsonrpc.error(-1, "no"))
  t.eq(kept[2]({}), false)
  t.eq(out[2], { jsonrpc = "2.0", id = 3, error = { code = -1, message = "no" } })
  local again = peer:reply_to('a"b') -- (as a successor image answers the request of kept[1])
  t.eq(jsonrpc.reply_id(again), 'a"b')
  t.eq(peer:unanswered(), 2, "reply_to's request counts until it is answered")
  again(nil)
  t.eq(out[3], { jsonrpc = "2.0", id = 'a"b', result = {} })
  t.eq(peer:unanswered(), 1)
end)
