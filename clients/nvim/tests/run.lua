-- Runs a test file in a headless Neovim; any error it raises exits Neovim with status 1
-- (a failed luafile alone leaves a headless Neovim running).
function Run(path)
  local ok, err = xpcall(dofile, debug.traceback, path)
  if not ok then
    io.stdout:write("FAIL " .. path .. "\n" .. tostring(err) .. "\n")
    vim.cmd("cquit 1")
  end
end
