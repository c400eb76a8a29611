-- The posture probe's cache (agentd/posture.lua probe_cached): a fleet of spawns runs the agent's
-- `doctor` once per binary, whether it answered or failed, and a changed binary is asked again.
-- The agent here is a script that counts its runs.
local uv = require "luv"
local testing = require "testing"
local posture = require "rmcp.agentd.posture"

-- A private dir with an agent script whose `doctor --json` prints body (or nothing) and notes each
-- run in the file runs; returns the paths.
local function fake_agent(t, body)
  local dir = t.tmpdir("rmcp-posture")
  local o = { dir = dir, bin = dir .. "/agent", runs = dir .. "/runs" }
  local f = assert(io.open(o.bin, "w"))
  f:write("#!/bin/sh\necho run >> '", o.runs, "'\n", body or "exit 1", "\n")
  f:close()
  uv.fs_chmod(o.bin, 493)
  return o
end

-- How many times the agent ran.
local function runs(o)
  local n = 0
  if uv.fs_stat(o.runs) then
    for _ in io.lines(o.runs) do n = n + 1 end
  end
  return n
end

-- The posture probe_cached answers for agent o (in o's dir, with a private Reasonix home).
local function probe(t, o)
  local p
  testing.with_env({ REASONIX_HOME = o.dir .. "/rx" }, function()
    p = t.await(function(done) posture.probe_cached(o.bin, o.dir, {}, done) end, 10000, "the posture")
  end)
  return p
end

test("an agent without doctor is run once for many spawns, and again once its binary changes", function(t)
  local o = fake_agent(t)
  local first = probe(t, o)
  t.match(first.error, "without JSON")
  t.match(first.warning, "^sandbox posture unknown")
  for _ = 1, 3 do t.eq(probe(t, o).error, first.error, "the failure is answered from the cache") end
  t.eq(runs(o), 1, "doctor ran once for four spawns")
  local f = assert(io.open(o.bin, "a"))
  f:write("# a new version\n")
  f:close()
  t.match(probe(t, o).error, "without JSON")
  t.eq(runs(o), 2, "a changed binary is asked again")
end)

test("an agent whose doctor answers is run once for many spawns", function(t)
  local o = fake_agent(t, [[echo '{"version":"9.9","sandbox":{"bash":"enforce","available":true,"write_roots":[]}}']])
  for _ = 1, 3 do t.eq(probe(t, o).sandbox, "bwrap") end
  t.eq(runs(o), 1, "doctor ran once for three spawns")
end)
