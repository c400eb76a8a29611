-- A stand-in for a module that a process start does not need yet: `local m = lazy "rmcp.x"`
-- requires rmcp.x on the first use of a field of m, so the start does not pay for loading it.
-- The stand-in holds the module's own table, as a local from require would (hot reload keeps
-- that table's identity), and forwards every field read to it.
return function(name)
  local module
  return setmetatable({}, {
    __index = function(_, key)
      module = module or require(name)
      return module[key]
    end,
  })
end
