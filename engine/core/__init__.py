"""Foundations every other part uses: errors, clocks, lane ids, atomic writes, file-lock slots.

Owns: `errors` (LanesError / ConfigError: one line with its fix), `clock` (real and fake clocks, so
timing is proved without sleeping), `ids` (lane ids, slugs, `lane/` branches), `atomic` (temp file,
fsync, `os.replace`; JSON lines), `slots` (counted slots held by `flock`), `limits` (size limits
on prompts and the config, with reads that stop at the limit), `sizes` (cap values as the lead
writes them: `150%`, `4G`; the machine's cores and memory), `repo` (the one repository-root
function, stdlib only so `ask` may use it), `utf8` (one incremental decoder per output stream), `peer`
(who is at the other end of a Unix socket), `ansi` (the ANSI-stripping expression and `terminal_text`,
what the command line prints agent text through), `schema` (the version every state file carries),
`hunks` (a unified diff's hunks: file, `@@` header, lines; what a hunk comment points at).
The bottom layer (pyproject's `[tool.importlinter]` contracts): it never imports another lanes-tui
package, nor psutil, tomlkit, textual or rich: everything imports it, so it must cost nothing.
"""
