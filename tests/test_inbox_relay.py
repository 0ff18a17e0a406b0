"""The inbox relay of Ray lanes (`remote.inbox_relay`), on real inbox folders: a question asked on a
node reaches the lead's InboxStore, the lead's answer reaches the node once, and each file keeps its
one writer (INBOX.md) whatever a node's folder holds."""

from __future__ import annotations

from pathlib import Path

from lanes_tui.engine.inbox.store import InboxStore
from lanes_tui.engine.remote.inbox_relay import MAX_FILE_BYTES, lead_answers, node_files, take_answers, take_node_files

LANE = "cache-a1"


def test_a_question_goes_to_the_lead_and_its_answer_back_once(tmp_path: Path) -> None:
    node, lead = InboxStore(tmp_path / "node"), InboxStore(tmp_path / "lead")
    asked = node.ask(LANE, kind="yesno", title="Drop the old cache?")
    node_dir, lead_dir = tmp_path / "node" / LANE, tmp_path / "lead" / LANE

    # node → lead: the question shows in the lead's inbox, exactly as asked
    assert take_node_files(lead_dir, node_files(node_dir)) == [f"{asked.id}.json"]
    assert [view.question.title for view in lead.list(LANE)] == ["Drop the old cache?"]
    assert take_node_files(lead_dir, node_files(node_dir)) == []  # nothing new: nothing rewritten

    # lead → node: the answer is written there once; a second (different) answer does not replace it
    lead.answer(asked.id, "y")
    answers = lead_answers(lead_dir)
    assert list(answers) == [f"{asked.id}.answer.json"]
    assert take_answers(node_dir, answers) == [f"{asked.id}.answer.json"]
    assert node.get(asked.id).answer == "yes" and node.get(asked.id).state == "answered"
    assert take_answers(node_dir, {f"{asked.id}.answer.json": b'{"id": "x", "value": "n"}'}) == []
    assert node.get(asked.id).answer == "yes"

    # delivered on the node: the mark comes to the lead, and the answer is not sent again
    node.deliver(asked.id)
    take_node_files(lead_dir, node_files(node_dir))
    assert lead.get(asked.id).state == "delivered"
    assert lead_answers(lead_dir) == {}


def test_nothing_a_node_writes_can_pose_as_the_lead_or_leave_the_folder(tmp_path: Path) -> None:
    node_dir, lead_dir = tmp_path / "node", tmp_path / "lead"
    node_dir.mkdir()
    qid = "q_" + "a" * 12
    (node_dir / f"{qid}.json").write_text("{}")
    (node_dir / f"{qid}.answer.json").write_text('{"value": "y"}')  # an "answer" written on the node
    (node_dir / "notes.txt").write_text("not an inbox file")
    (node_dir / f"{'q_' + 'b' * 12}.json").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    sent = node_files(node_dir)
    assert list(sent) == [f"{qid}.json"], "answers, strangers and oversized files never leave the node"

    forged = {f"{qid}.answer.json": b"{}", "../escape.json": b"{}", f"{qid}.json/../x.json": b"{}",
              f"{qid}.delivered.json": b"{}"}
    assert take_node_files(lead_dir, forged) == [f"{qid}.delivered.json"]
    assert sorted(p.name for p in lead_dir.iterdir()) == [f"{qid}.delivered.json"]
    assert not (tmp_path / "escape.json").exists()

    # an answer to a question never asked on the node, or under a bad name, is not written there
    assert take_answers(node_dir, {f"{'q_' + 'c' * 12}.answer.json": b"{}", "../x.answer.json": b"{}",
                                   f"{qid}.json": b"{}"}) == []
