-- agentd.nvim: defines the commands of the agentd client (lua/agentd); options go to
-- require("agentd").setup({...}). Only the small entry module loads here: the client
-- (agentd.client) loads when a command is first used.
if vim.g.loaded_agentd then
  return
end
vim.g.loaded_agentd = true
if vim.fn.has("nvim-0.7") == 0 then
  vim.api.nvim_err_writeln("agentd.nvim needs Neovim 0.7 or newer")
  return
end
require("agentd").define_commands()
