-- A stand-in for a module that a process start does not need yet: `local m = lazy "rmcp.x"`
-- requires rmcp.x on the first use of a field of m, so the start does not pay for loading it.
-- From then on the stand-in reads through to the module's own table (which hot reload keeps,
-- changing its fields in place), as a local from require would.
return function(name)
  local stand_in = {}
  return setmetatable(stand_in, {
    __index = function(_, key)
      local module = require(name)
      setmetatable(stand_in, { __index = module }) -- later reads: a table lookup, no call
      return module[key]
    end,
  })
end
