"""The claim judge: a chat model labels an answers file's claims by a written rubric (``rubric/v2.md``).

For each answer: (1) split it into atomic claims, unless the file gives the claims (a person's,
when a judge is calibrated against them); (2) for each claim, do the numbered contexts support it;
(3) does the answer address the question; (4) where the goldset gives a reference answer, split it
into claims and ask for each whether the answer states it. Each request is one narrow question with
a true/false verdict, and sees only the question, the answer and the contexts.

A reply that is not the JSON asked for, or an empty one (a refusal), leaves its label undecided
(null) and is recorded in the row's ``judge`` section; labels are never guessed. An empty answer
makes no claims and addresses nothing, and needs no request. Replies are kept in
``<out>.replies.jsonl``: a rerun sends only what is missing.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

import regex
from rich.console import Console

from bench import files
from bench.answers.calls import load_prompt, numbered, replies_path
from bench.answers.contexts import RunContexts, open_run
from bench.errors import BenchError
from bench.formatting import plural
from bench.inputs.answers import JUDGE, Answer, AnswersFile, Claim, meta_path, save_answers
from bench.llm.asking import Asker, Request
from bench.llm.client import ChatClient, json_in_reply
from bench.llm.prompts import Template
from bench.llm.replies import Row, Tally, reply_text
from bench.llm.settings import ChatSettings
from bench.text.scripts import CJK, collapse_spaces

RUBRIC = Path(__file__).with_name("rubric") / "v2.md"
RUBRIC_NEEDS = {
    "system": (),
    "claims": ("question", "answer"),
    "support": ("contexts", "claim"),
    "relevance": ("question", "answer"),
    "reference": ("question", "answer", "claim"),
}
MAX_TOKENS = 600  # of a verdict or a list of claims, unless the chat settings give their own
# What one request found: the raw reply, the model's reason, and the problem that left its label undecided.
Found = dict[str, object]
Rows = dict[str, Row]  # log rows by request key
MALFORMED, REFUSED, NOT_ASKED = "malformed reply", "refused (empty reply)", "not asked (budget)"
# Where a generated file's meta says what it was made from; a judged file keeps saying so.
_CARRIED = ("generated", "run_id", "run_path", "candidate", "k", "goldset", "generator", "prompt")


# Where a sentence of Chinese or Japanese ends: 。！？； (a run of them), or …… (a run) unless an
# enumeration goes on after it (……等) or other punctuation ends the sentence; with the closing
# quotes and brackets after it.
_CJK_END = regex.compile(r"(?:[。！？；]+|……+(?![…等，、。！？；]))[”’」』）》】〕\)]*")
_WORD = regex.compile(r"\w")


def sentences(claim: str) -> list[str]:
    """A claim as the sentences it holds: cut at the sentence ends of Chinese and Japanese, where no
    space follows them, so that each claim a model put in one string is judged alone. A claim
    without CJK text is returned whole: English full stops end abbreviations and figures too."""
    if not CJK.search(claim):
        return [claim]
    cut, at = [], 0
    for m in _CJK_END.finditer(claim):
        cut.append(claim[at : m.end()].strip())
        at = m.end()
    cut.append(claim[at:].strip())
    return [c for c in cut if _WORD.search(c)] or [claim]


@dataclass(frozen=True)
class GoldQuestion:
    text: str
    reference: str = ""  # the goldset's reference answer, "" where it gives none


@dataclass
class JudgeReport:
    out: Path
    meta: Path
    replies: Path
    answers: int
    claims: int
    supported: int
    undecided: int
    problems: Counter
    tally: Tally


def judged_path(path: Path) -> Path:
    """``answers.jsonl`` → ``answers.judged.jsonl``, beside it."""
    return path.with_name(f"{path.stem if path.suffix == '.jsonl' else path.name}.judged.jsonl")


def read_goldset_questions(path: Path) -> dict[str, GoldQuestion]:
    """The question text and reference answer of each goldset row (the rest of the goldset is the run's concern)."""
    out = {}
    for lineno, line in files.numbered_lines(files.read_text(path)):
        row = files.json_object(line, f"{path}:{lineno}", '"id" and "question"')
        qid, text, reference = row.get("id"), row.get("question"), row.get("answer", "")
        if isinstance(qid, str) and isinstance(text, str):
            out[qid] = GoldQuestion(text, reference.strip() if isinstance(reference, str) else "")
    return out


def resolve_sources(
    source: AnswersFile,
    *,
    run_ref: str | Path | None = None,
    results: Path = Path("results"),
    candidate: str | None = None,
    goldset: Path | None = None,
) -> tuple[RunContexts | None, dict[str, GoldQuestion]]:
    """Where contexts and questions come from: ``--run`` or the run the file's meta names (opened
    when given, or when answers lack contexts), and ``--goldset``, else the run's goldset."""
    meta = source.meta
    kept = source.meta_text("run_path")  # where the run lay when the answers were made; else its id, in --results
    named = kept if kept is not None and Path(kept).is_dir() else source.meta_text("run_id")
    run = None
    bare = [a.question_id for a in source.answers if a.contexts is None]
    if run_ref is not None or (bare and named):
        run = open_run(
            run_ref or str(named), results, candidate or (None if run_ref else source.meta_text("candidate"))
        )
    elif bare:
        raise BenchError(
            f"{source.path}: {plural(len(bare), 'answer')} ({', '.join(bare[:3])}) give no contexts and the file "
            "names no run; pass --run RUN [--candidate ID], or give each answer's contexts"
        )
    if goldset is None:
        for where in (run.run.manifest.goldset if run else None, meta.get("goldset")):
            path = where.get("path") if isinstance(where, dict) else None
            if isinstance(path, str) and Path(path).is_file():
                goldset = Path(path)
                break
    questions = read_goldset_questions(goldset) if goldset is not None else {}
    if run is not None:
        for qid, record in run.records.items():
            questions.setdefault(qid, GoldQuestion(record.question))
    missing = [a.question_id for a in source.answers if a.question_id not in questions and "question" not in a.extra]
    if missing:
        raise BenchError(
            f"{source.path}: the question of {', '.join(missing[:3])}{' …' if len(missing) > 3 else ''} is not "
            'known; pass --goldset FILE (or --run RUN), or give each answer its "question"'
        )
    return run, questions


@dataclass
class _Case:
    """One answer being judged, and what the judge said about it."""

    answer: Answer
    question: str
    contexts: tuple[str, ...]
    reference: str
    claims: list[str] | None = None
    reference_claims: list[str] | None = None
    record: dict[str, object] = field(default_factory=dict)  # the row's "judge" section
    problems: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.answer.answer.strip()


class _Judging:
    def __init__(self, rubric: Template, client: ChatClient, asker: Asker) -> None:
        self.rubric, self.client, self.asker = rubric, client, asker
        self.problems: Counter = Counter()

    def request(self, section: str, case: _Case, what: str, **values: str) -> Request:
        messages = self.rubric.messages(section, **values)
        about = {"question_id": case.answer.question_id, "ask": what, "rubric_version": self.rubric.version}
        return Request(self.client.request_key(messages), messages, about)

    def verdict(self, case: _Case, what: str, request: Request, rows: Rows, flag: str) -> tuple[bool | None, Found]:
        """The boolean ``flag`` of a reply, with the raw reply and reason; None (and a recorded
        problem) when the reply gives none."""
        reply, problem = self._reply(request, rows)
        found: Found = {"reply": reply}
        value = None
        if problem is None:
            obj = json_in_reply(reply or "")
            if not isinstance(obj, dict) or not isinstance(obj.get(flag), bool):
                problem = f'{MALFORMED}: no true/false "{flag}"'
            else:
                value = obj[flag]
                if isinstance(obj.get("reason"), str):
                    found["reason"] = obj["reason"]
        if problem is not None:
            found["problem"] = problem
            self._problem(case, what, problem)
        return value, found

    def claim_list(self, case: _Case, what: str, request: Request, rows: Rows) -> tuple[list[str] | None, Found]:
        reply, problem = self._reply(request, rows)
        found: Found = {"reply": reply}
        claims = None
        if problem is None:
            obj = json_in_reply(reply or "")
            items = obj.get("claims") if isinstance(obj, dict) else None
            if not isinstance(items, list) or not all(isinstance(c, str) for c in items):
                problem = f'{MALFORMED}: no "claims" list of strings'
            else:
                claims = [s for c in items if c.strip() for s in sentences(collapse_spaces(c))]
        if problem is not None:
            found["problem"] = problem
            self._problem(case, what, problem)
        return claims, found

    def _reply(self, request: Request, rows: Rows) -> tuple[str | None, str | None]:
        row = rows.get(request.key)
        if row is None:
            return None, NOT_ASKED
        reply = reply_text(row)
        return reply, (None if reply.strip() else REFUSED)

    def _problem(self, case: _Case, what: str, problem: str) -> None:
        case.problems.append(f"{what}: {problem}")
        self.problems[problem.split(":")[0]] += 1


def judge_answers(
    source: AnswersFile,
    out: Path | None,
    chat: ChatSettings,
    *,
    rubric: Path | None = None,
    run: RunContexts | None = None,
    questions: dict[str, GoldQuestion] | None = None,
    force: bool = False,
    console: Console | None = None,
) -> JudgeReport:
    """Label ``source``'s answers with the verdicts of ``chat``'s model (``max_tokens`` 600 unless it
    says); write them as the answers file ``out`` (None: ``<stem>.judged.jsonl`` beside it)."""
    out, console, questions = Path(out or judged_path(source.path)), console or Console(stderr=True), questions or {}
    chat.check()
    _check_out(source, out, force)
    template = load_prompt(rubric or RUBRIC, RUBRIC_NEEDS)
    client = chat.client(MAX_TOKENS)
    cases = [_case(a, source, run, questions) for a in source.answers]
    asker = chat.asker(client, replies_path(out))
    judging = _Judging(template, client, asker)
    with console.status(f"judging {plural(len(cases), 'answer')} with {chat.model}") as status:
        asker.status = status
        _split(judging, cases)
        judged = _decide(judging, cases)
    tally = asker.tally
    meta = {k: source.meta[k] for k in _CARRIED if k in source.meta}
    if run is not None:
        meta |= {"run_id": run.run_id, "run_path": str(run.run.path), "candidate": run.candidate, "k": run.k}
    meta |= {
        "labels": JUDGE,
        "source": {"path": str(source.path), "sha256": hashlib.sha256(source.path.read_bytes()).hexdigest()},
        "judge": {
            **chat.describe(client), "response_format": client.json_mode,
            "rubric_version": template.version, "rubric_sha256": template.sha256,
        },
        "rubric": template.describe(),
        "replies": replies_path(out).name,
        "problems": dict(sorted(judging.problems.items())),
        **tally.to_meta(chat.prices, chat.max_cost),
    }  # fmt: skip
    save_answers(out, judged, meta)
    decided = [c for a in judged for c in a.claims or ()]
    report = JudgeReport(
        out, meta_path(out), replies_path(out), len(judged), len(decided), sum(1 for c in decided if c.supported),
        sum(1 for c in decided if c.supported is None), judging.problems, tally,
    )  # fmt: skip
    _print_summary(console, report)
    return report


def _check_out(source: AnswersFile, out: Path, force: bool) -> None:
    if out.resolve() == source.path.resolve():
        raise BenchError(f"--out {out} is the file being judged; give another path (the default is beside it)")
    if out.exists() and not force:
        meta = files.read_json(meta_path(out), "delete it, or pass --force") if meta_path(out).is_file() else None
        labels = meta.get("labels") if isinstance(meta, dict) else None
        if labels != JUDGE:  # a judge's earlier labels are replaced freely; a person's never silently
            raise BenchError(
                f"{out} exists and is not a judge's output; pass --force to replace it, or give another --out"
            )


def _case(answer: Answer, source: AnswersFile, run: RunContexts | None, questions: dict[str, GoldQuestion]) -> _Case:
    where = f"{source.path}: answer to {answer.question_id!r}"
    if answer.contexts is not None:
        contexts = answer.contexts
    elif run is not None:
        contexts = run.contexts(answer, where)
    else:
        raise BenchError(f"{where} gives no contexts and no run is named; pass --run RUN [--candidate ID]")
    gold = questions.get(answer.question_id)
    question = answer.extra.get("question")
    if not isinstance(question, str) or not question.strip():
        if gold is None:
            raise BenchError(f"{where}: its question is not known; pass --goldset FILE or --run RUN")
        question = gold.text
    case = _Case(answer, question, contexts, gold.reference if gold else "")
    if answer.claims is not None:
        case.claims, case.record["claims"] = [c.text for c in answer.claims], {"given": True}
    if answer.reference_claims is not None:
        case.reference_claims = [c.text for c in answer.reference_claims]
        case.record["reference_claims"] = {"given": True}
    return case


def _split(judging: _Judging, cases: list[_Case]) -> None:
    """Step one: the answers' and the references' claims, and the relevance verdicts (all independent)."""
    asks: list[tuple[_Case, str, Request]] = []
    for case in cases:
        q, a = case.question, case.answer.answer
        if case.empty:
            case.record["empty_answer"] = True
            case.claims = [] if case.claims is None else case.claims
        elif case.claims is None:
            asks.append((case, "claims", judging.request("claims", case, "claims", question=q, answer=a)))
        if not case.empty:
            asks.append((case, "relevance", judging.request("relevance", case, "relevance", question=q, answer=a)))
        if case.reference_claims is None and case.reference:
            split = judging.request("claims", case, "reference claims", question=q, answer=case.reference)
            asks.append((case, "reference", split))
    rows = judging.asker.ask((r for _, _, r in asks), f"splitting into claims with {judging.client.model}")
    for case, what, request in asks:
        if what == "relevance":
            value, found = judging.verdict(case, "relevance", request, rows, "addresses_question")
            case.record["addresses_question"], case.answer = found, replace(case.answer, addresses_question=value)
        elif what == "claims":
            case.claims, case.record["claims"] = judging.claim_list(case, "claims", request, rows)
        else:
            case.reference_claims, found = judging.claim_list(case, "reference claims", request, rows)
            case.record["reference_claims"] = found


def _decide(judging: _Judging, cases: list[_Case]) -> list[Answer]:
    """Step two: one verdict per claim (supported by the contexts) and per reference claim (stated by the answer)."""
    asks: list[tuple[_Case, str, int, Request]] = []
    for case in cases:
        contexts, q, a = numbered(case.contexts), case.question, case.answer.answer
        for i, claim in enumerate(case.claims or (), 1):
            asks.append(
                (case, "support", i, judging.request("support", case, f"claim {i}", contexts=contexts, claim=claim))
            )
        for i, claim in enumerate(() if case.empty else case.reference_claims or (), 1):
            stated = judging.request("reference", case, f"reference claim {i}", question=q, answer=a, claim=claim)
            asks.append((case, "reference", i, stated))
    rows = judging.asker.ask((r for *_, r in asks), f"deciding claims with {judging.client.model}")
    verdicts: dict[tuple[int, str, int], tuple[bool | None, Found]] = {}
    for case, what, i, request in asks:
        label = f"claim {i}" if what == "support" else f"reference claim {i}"
        flag = "supported" if what == "support" else "stated"
        verdicts[(id(case), what, i)] = judging.verdict(case, label, request, rows, flag)
    return [_answer(case, verdicts) for case in cases]


def _answer(case: _Case, verdicts: dict[tuple[int, str, int], tuple[bool | None, Found]]) -> Answer:
    """The judged row: labels in place, and the raw replies under ``judge``."""
    a = case.answer
    given = {c.text: c.extra for c in a.claims or ()}
    given_refs = {c.text: c.extra for c in a.reference_claims or ()}
    claims, refs, support, covered = None, None, [], []
    if case.claims is not None:
        claims = []
        for i, text in enumerate(case.claims, 1):
            value, found = verdicts[(id(case), "support", i)]
            claims.append(_claim(text, value, found, given.get(text, {})))
            support.append(found)
    if case.reference_claims is not None:
        refs = []
        for i, text in enumerate(case.reference_claims, 1):
            value, found = verdicts.get((id(case), "reference", i), (False, {"reason": "the answer is empty"}))
            refs.append(_claim(text, value, found, given_refs.get(text, {})))
            covered.append(found)
    record = dict(case.record)
    if claims is not None:
        record["supported"] = support
    if refs is not None:
        given_section = record.get("reference_claims")
        record["reference_claims"] = {**(given_section if isinstance(given_section, dict) else {}), "stated": covered}
    if case.empty:
        record["addresses_question"] = {"reason": "the answer is empty"}
    record["problems"] = case.problems
    addresses = False if case.empty else a.addresses_question
    return replace(
        a, claims=None if claims is None else tuple(claims), addresses_question=addresses,
        reference_claims=None if refs is None else tuple(refs), extra={**a.extra, "judge": record},
    )  # fmt: skip


def _claim(text: str, value: bool | None, found: Found, extra: dict[str, object]) -> Claim:
    reason = {"reason": found["reason"]} if "reason" in found else {}
    return Claim(text, value, {**{k: v for k, v in extra.items() if k != "reason"}, **reason})


def _print_summary(console: Console, r: JudgeReport) -> None:
    console.print(
        f"judged {plural(r.answers, 'answer')}: {r.supported} of {plural(r.claims, 'claim')} supported"
        + (f", {r.undecided} undecided" if r.undecided else "")
    )
    if r.problems:
        console.print("problems: " + ", ".join(f"{n} {what}" for what, n in sorted(r.problems.items())))
    console.print(r.tally.summary())
