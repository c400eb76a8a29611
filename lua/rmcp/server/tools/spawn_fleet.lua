-- reasonix_spawn_fleet: validate an assigned-fleet JSON file and spawn all its agents in one call.
local json = require "rmcp.lib.json"
local fleet = require "rmcp.rules.fleet"
local common = require "rmcp.server.tools.common"

-- Reads and decodes the fleet file at path (relative: to the project dir); returns the normalized
-- fleet or nil, message.
local function read_fleet(path, project_dir)
  if path:sub(1, 1) ~= "/" then
    if not project_dir then return nil, "path must be absolute (this server has no project dir)" end
    path = project_dir .. "/" .. path
  end
  local f, err = io.open(path, "r")
  if not f then return nil, "cannot read the fleet file: " .. tostring(err) end
  local text = f:read(fleet.max_file_bytes + 1)
  f:close()
  if text == nil then return nil, "cannot read the fleet file " .. path .. " (a directory?)" end
  if #text > fleet.max_file_bytes then return nil, "the fleet file " .. path .. " is over 1 MiB" end
  local ok, doc = pcall(json.decode, text)
  if not ok then return nil, "the fleet file " .. path .. " is not JSON: " .. tostring(doc) end
  local out, errs = fleet.normalize(doc, path)
  if not out then return nil, "the fleet file " .. path .. " was rejected whole, no agent started:\n" .. table.concat(errs, "\n") end
  return out
end

return {
  name = "reasonix_spawn_fleet",
  toolset = "fleet",
  title = "Spawn fleet",
  description = "Spawn every agent of a fleet JSON file ({name?, parallelism?, defaults?, agents|tasks} or an "
    .. "array; see README), checked whole first. Ordered results[], session_ids for one watch.",
  inputSchema = common.object({ path = { type = "string", minLength = 1 } }, { "path" }),
  annotations = { readOnlyHint = false, destructiveHint = false, idempotentHint = false, openWorldHint = true },
  handler = function(args, ctx)
    local f, err = read_fleet(args.path, ctx.project_dir)
    if not f then return nil, err end
    f.path = args.path
    return ctx.agentd("spawn_fleet", f, true)
  end,
}
