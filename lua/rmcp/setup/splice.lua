-- One replacement in a file's text, kept so that it can be undone byte for byte: setup's edits of a
-- host's config and of our env file are each a splice {at, removed, inserted, after}, where after
-- is the hash of the whole text it produced (an undo applies only to that text; anything else was
-- changed since, and the caller falls back to a structural removal).
local hash = require "rmcp.lib.hash"

local M = {}

-- The splice of text that replaces the count bytes at at (1-based) with inserted, and the text it
-- makes: edit, new_text.
function M.make(text, at, count, inserted)
  local new = text:sub(1, at - 1) .. inserted .. text:sub(at + count)
  return { at = at, removed = text:sub(at, at + count - 1), inserted = inserted, after = hash.fnv1a64(new) }, new
end

-- The text before edit was applied to text, or nil when text is not what edit produced.
function M.undo(text, edit)
  if hash.fnv1a64(text) ~= edit.after then return nil end
  return text:sub(1, edit.at - 1) .. edit.removed .. text:sub(edit.at + #edit.inserted)
end

-- Undoes edits (applied in order) on text, newest first; nil when text changed since the newest.
function M.undo_all(text, edits)
  for i = #edits, 1, -1 do
    text = M.undo(text, edits[i])
    if not text then return nil end
  end
  return text
end

return M
