-- Try agentd.nvim without touching your config:
--   agentd &                                   # a daemon (or its service)
--   nvim -u clients/nvim/examples/minimal.lua
-- then :AgentdNew, :AgentdSend Hello, select lines and press <leader>as.
local here = debug.getinfo(1, "S").source:sub(2):match("(.*)/examples/")
vim.opt.runtimepath:prepend(here)
vim.cmd("filetype plugin on | syntax on")
vim.g.mapleader = " "

require("agentd").setup({
  -- socket = "/run/user/1000/agentd/agentd.sock",   -- default: the daemon's own rule
  open = "vsplit",
})
vim.keymap.set("x", "<leader>as", "<Plug>(agentd-send)", { remap = true, desc = "agentd: send the selection" })
vim.keymap.set("n", "<leader>an", "<cmd>AgentdNew<CR>", { desc = "agentd: new agent" })
vim.keymap.set("n", "<leader>aa", "<cmd>AgentdAgents<CR>", { desc = "agentd: open an agent" })
vim.keymap.set("n", "<leader>ac", "<cmd>AgentdCancel<CR>", { desc = "agentd: cancel the run" })
