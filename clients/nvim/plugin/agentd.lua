-- agentd.nvim: commands of the agentd client (lua/agentd). Options: require("agentd").setup{}.
if vim.g.loaded_agentd then
  return
end
vim.g.loaded_agentd = true
if vim.fn.has("nvim-0.7") == 0 then
  vim.api.nvim_err_writeln("agentd.nvim needs Neovim 0.7 or newer")
  return
end
require("agentd").define_commands()
-- Sends the visual selection with its file and line range: xmap <leader>as <Plug>(agentd-send)
vim.keymap.set("x", "<Plug>(agentd-send)", ":AgentdSend<CR>", { silent = true, desc = "agentd: send the selection" })
