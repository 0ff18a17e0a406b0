"""The inbox: questions agents ask the lead and the answers, as files under `.lanes/state/inbox/`.

Owns: `files` (the question, answer and mark files, parsed strictly: an agent may have written
them), `options` (a question's options built, an answer normalised against them), `store`
(InboxStore: ask, answer, deliver, cancel, orphan; `wait_for_answer`), `view` (the state of a
question derived from its files).
This is all `lanes-tui ask` loads, so it never imports a third-party package (psutil, textual,
rich). Its place in the layers: pyproject's `[tool.importlinter]` contracts (docs/layout.md).
"""
