"""The sql_tools env: read-only SQL tools over a bundled shop database, one submitted answer per episode."""

from __future__ import annotations

import time
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from openenv.core.env_server.mcp_types import CallToolAction as OECallToolAction
from openenv.core.mcp_client import MCPToolClient as OEMCPToolClient

from openenv_train.client import GenericEnvClient
from openenv_train.core import CallToolAction, CallToolObservation, ListToolsAction, ServerError
from openenv_train.envs.sql_tools import SQLQuestionObservation, SQLToolsEnvironment
from openenv_train.envs.sql_tools._generate import generate
from openenv_train.envs.sql_tools._questions import Question, question_bank
from openenv_train.envs.sql_tools._scoring import answers_match, scalars_match
from tests.conftest import serve_process

DATA = resources.files("openenv_train.envs.sql_tools").joinpath("data")
QUESTIONS = list(question_bank().values())


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "call_tool", "tool_name": tool, "arguments": arguments}


def use(env: SQLToolsEnvironment, tool: str, **arguments: Any) -> CallToolObservation:
    obs = env.step(CallToolAction(tool_name=tool, arguments=arguments))
    assert isinstance(obs, CallToolObservation)
    return obs


def answer_of(rows: list[list[Any]]) -> Any:
    """What a scripted agent submits for a query's rows: one value, or the first column as a list."""
    return rows[0][0] if len(rows) == 1 else [row[0] for row in rows]


def wrong_answer(question: Question) -> Any:
    expected = question.answer
    if isinstance(expected, list):
        return list(reversed(expected)) if len(expected) > 1 else expected + expected
    if isinstance(expected, int | float):
        return expected * 1.01 + 1
    return expected + " Ltd"


# -- the data and the question bank ----------------------------------------------------------------------
def test_the_shipped_csvs_are_exactly_what_the_generator_writes() -> None:
    for table, text in generate().items():
        assert DATA.joinpath(f"{table}.csv").read_text(encoding="utf-8") == text, table


def test_the_bank_has_enough_questions_with_answers_from_their_sql() -> None:
    assert len(QUESTIONS) >= 30
    assert len({q.id for q in QUESTIONS}) == len(QUESTIONS)
    assert question_bank()["q01"].answer == 60
    assert question_bank()["q10"].answer == ["Classic Biography", "Compact Knife Set", "Smart Blender"]
    assert any(isinstance(q.answer, float) for q in QUESTIONS) and any(isinstance(q.answer, str) for q in QUESTIONS)


# -- tools -----------------------------------------------------------------------------------------------
def test_tools_are_listed_with_schemas() -> None:
    env = SQLToolsEnvironment()
    env.reset(question_id="q01")
    tools = {t.name: t for t in env.step(ListToolsAction()).tools}  # type: ignore[attr-defined]
    assert list(tools) == ["get_question", "list_tables", "describe_table", "query", "submit_answer"]
    assert tools["query"].input_schema["required"] == ["sql"]
    assert tools["describe_table"].input_schema["properties"]["table"]["type"] == "string"
    assert "ends the episode" in tools["submit_answer"].description


def test_reset_observation_and_get_question_carry_the_question() -> None:
    env = SQLToolsEnvironment()
    first = env.reset(question_id="q06", episode_id="ep")
    assert isinstance(first, SQLQuestionObservation)
    assert (first.question_id, first.question) == ("q06", "Which country has the most customers?")
    assert first.tables == ["customers", "order_items", "orders", "products", "reviews"]
    assert first.metadata == {"question_id": "q06", "question": first.question}
    assert first.reward == 0.0 and first.done is False and "single value" in first.answer_format
    data = use(env, "get_question").result["data"]
    assert data == {"question_id": "q06", "question": first.question, "answer_format": first.answer_format}
    assert env.state.model_dump() == {"episode_id": "ep", "step_count": 1, "question_id": "q06",
                                      "submitted": False, "correct": None}


def test_list_and_describe_tables() -> None:
    env = SQLToolsEnvironment()
    env.reset(question_id="q01")
    assert use(env, "list_tables").result["data"] == ["customers", "order_items", "orders", "products", "reviews"]
    described = use(env, "describe_table", table="orders").result["data"]
    assert described["row_count"] == 150
    assert [c["name"] for c in described["columns"]] == ["order_id", "customer_id", "order_date", "status", "shipped_date"]
    assert described["columns"][4]["nullable"] is True and described["columns"][0]["primary_key"] is True
    assert described["foreign_keys"] == [{"column": "customer_id", "references": "customers.customer_id"}]
    missing = use(env, "describe_table", table="clients")
    assert missing.error is not None and "no table 'clients'" in missing.error.message
    assert "customers" in missing.error.message


def test_query_returns_columns_and_rows_and_caps_the_rows() -> None:
    env = SQLToolsEnvironment()
    env.reset(question_id="q01")
    data = use(env, "query", sql="SELECT category, COUNT(*) AS n FROM products GROUP BY 1 ORDER BY 1").result["data"]
    assert data["columns"] == ["category", "n"] and data["rows"][0] == ["Books", 5] and data["row_count"] == 6
    assert data["truncated"] is False
    big = use(env, "query", sql="SELECT * FROM order_items").result["data"]
    assert big["row_count"] == SQLToolsEnvironment.max_rows == 200 and big["truncated"] is True
    pragma = use(env, "query", sql="PRAGMA table_info(products)").result["data"]
    assert [row[1] for row in pragma["rows"]] == ["product_id", "name", "category", "price", "stock"]


@pytest.mark.parametrize(("sql", "message"), [
    ("SELECT nope FROM products", "no such column"),
    ("SELEC 1", "syntax error"),
    ("SELECT 1; SELECT 2", "one SQL statement"),
    ("SELECT zeroblob(10000000)", "too big"),
])
def test_sql_errors_are_tool_errors_and_the_session_goes_on(sql: str, message: str) -> None:
    env = SQLToolsEnvironment()
    env.reset(question_id="q01")
    obs = use(env, "query", sql=sql)
    assert obs.error is not None and obs.error.error_type == "execution_error" and message in obs.error.message
    assert obs.result is None and obs.done is False and obs.reward is None
    assert use(env, "query", sql="SELECT 1").result["data"]["rows"] == [[1]]


@pytest.mark.parametrize("sql", [
    "INSERT INTO products VALUES (99, 'Free Lunch', 'Food', 0, 1)",
    "UPDATE products SET price = 0",
    "DELETE FROM orders",
    "REPLACE INTO products VALUES (1, 'a', 'b', 1, 1)",
    "DROP TABLE products",
    "CREATE TABLE t (x)",
    "CREATE TEMP TABLE t (x)",
    "CREATE VIEW v AS SELECT 1",
    "ALTER TABLE products ADD COLUMN z",
    "ATTACH DATABASE ':memory:' AS other",
    "ATTACH DATABASE '{tmp}/attached.db' AS other",
    "VACUUM INTO '{tmp}/copy.db'",
    "VACUUM",
    "DETACH DATABASE main",
    "PRAGMA query_only = OFF",
    "PRAGMA writable_schema = ON",
    "PRAGMA journal_mode = WAL",
    "BEGIN",
    "SAVEPOINT s",
    "REINDEX",
    "ANALYZE",
    "SELECT load_extension('evil')",
])
def test_writes_are_refused_and_change_nothing(sql: str, tmp_path: Path) -> None:
    env = SQLToolsEnvironment()
    env.reset(question_id="q01")
    obs = use(env, "query", sql=sql.format(tmp=tmp_path))
    assert obs.error is not None and obs.error.error_type == "execution_error"
    assert "read-only" in obs.error.message
    assert list(tmp_path.iterdir()) == []
    counts = use(env, "query", sql="SELECT (SELECT COUNT(*) FROM products), (SELECT SUM(price) > 0 FROM products), "
                                   "(SELECT COUNT(*) FROM orders), (SELECT COUNT(*) FROM sqlite_master)").result["data"]
    assert counts["rows"] == [[30, 1, 150, 5 + 3]]  # 5 tables + 3 automatic indexes, as shipped
    assert use(env, "query", sql="PRAGMA query_only").error is not None


class _QuickTimeout(SQLToolsEnvironment):
    time_limit_s = 0.25


def test_a_runaway_query_is_stopped_at_its_time_limit() -> None:
    env = _QuickTimeout()
    env.reset(question_id="q01")
    for sql in ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c",
                "SELECT COUNT(*) FROM order_items a, order_items b, order_items c, order_items d"):
        started = time.monotonic()
        obs = use(env, "query", sql=sql)
        assert time.monotonic() - started < 2.0
        assert obs.error is not None and obs.error.error_type == "timeout" and "0.25 s" in obs.error.message
    assert use(env, "query", sql="SELECT COUNT(*) FROM customers").result["data"]["rows"] == [[60]]
    assert env.state.step_count == 3


def test_sessions_have_their_own_database() -> None:
    first, second = SQLToolsEnvironment(), SQLToolsEnvironment()
    assert first._db._conn is not second._db._conn
    first.close()
    assert use(second, "query", sql="SELECT COUNT(*) FROM reviews").result["data"]["rows"] == [[80]]


# -- rewards ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("question", QUESTIONS, ids=[q.id for q in QUESTIONS])
def test_every_reference_answer_scores_one_and_a_wrong_one_zero(question: Question) -> None:
    env = SQLToolsEnvironment()
    env.reset(question_id=question.id)
    rows = use(env, "query", sql=question.sql).result["data"]["rows"]
    right = use(env, "submit_answer", answer=answer_of(rows))
    assert (right.reward, right.done, right.result["data"]["correct"]) == (1.0, True, True)
    assert env.state.correct is True and env.state.submitted is True

    env.reset(question_id=question.id)
    wrong = use(env, "submit_answer", answer=wrong_answer(question))
    assert (wrong.reward, wrong.done, wrong.result["data"]["correct"]) == (0.0, True, False)
    assert wrong.result["data"]["expected"] == question.answer


def test_numbers_match_within_tolerance() -> None:
    assert scalars_match(52034.63, "52,034.63") and scalars_match(52034.63, 52034.63 * (1 + 0.9e-4))
    assert not scalars_match(52034.63, 52034.63 * (1 + 2e-4))
    assert scalars_match(0.0, 5e-7) and not scalars_match(0.0, 5e-6)
    assert scalars_match(60, "60") and scalars_match(60, 60.0) and not scalars_match(60, "sixty")
    assert not scalars_match(1, True)


def test_text_is_compared_normalised() -> None:
    assert scalars_match("Vintage Webcam", '  "vintage   webcam". ')
    assert not scalars_match("Vintage Webcam", "Vintage Webcams")


def test_lists_match_in_order_in_any_spelling() -> None:
    expected: list[str | int | float] = ["Osaka", "Paris", "Toronto", "Vancouver"]
    for spelling in (expected, '["osaka", "paris", "toronto", "vancouver"]', "Osaka, Paris, Toronto, Vancouver",
                     "Osaka\nParis\nToronto\nVancouver\n", "[Osaka, Paris, Toronto, Vancouver]"):
        assert answers_match(expected, spelling), spelling
    for spelling in ("Paris, Osaka, Toronto, Vancouver", "Osaka, Paris, Toronto", expected + ["Lyon"]):
        assert not answers_match(expected, spelling), spelling
    assert answers_match(60, [60]) and not answers_match(60, [60, 60])


def test_the_submission_of_a_list_question_accepts_text() -> None:
    env = SQLToolsEnvironment()
    assert "a list of values" in env.reset(question_id="q32").answer_format
    obs = use(env, "submit_answer", answer="Books, Toys, Garden, Sports, Electronics, Kitchen")
    assert obs.reward == 1.0


# -- episodes, determinism, invalid actions --------------------------------------------------------------
def test_seed_picks_the_question_deterministically() -> None:
    picked = [SQLToolsEnvironment().reset(seed=s).question_id for s in range(12)]
    assert picked == [SQLToolsEnvironment().reset(seed=s).question_id for s in range(12)]
    assert len(set(picked)) > 5
    assert SQLToolsEnvironment().reset(seed=3, question_id="q09").question_id == "q09"


def test_an_unknown_question_id_is_refused_and_keeps_the_episode() -> None:
    env = SQLToolsEnvironment()
    env.reset(question_id="q02", episode_id="keep")
    use(env, "list_tables")
    before = env.state.model_dump()
    with pytest.raises(ValueError, match="did you mean"):
        env.reset(question_id="q2")
    with pytest.raises(ValueError, match=r"q01\.\.q36"):
        env.reset(question_id="nothing-like-it")
    assert env.state.model_dump() == before
    assert use(env, "get_question").result["data"]["question_id"] == "q02"


def test_submit_ends_the_episode_and_later_calls_are_refused() -> None:
    env = SQLToolsEnvironment()
    env.reset(question_id="q01", episode_id="e")
    assert use(env, "submit_answer", answer="60").reward == 1.0
    before = env.state.model_dump()
    for tool, args in (("submit_answer", {"answer": "61"}), ("query", {"sql": "SELECT 1"}), ("get_question", {})):
        obs = use(env, tool, **args)
        assert obs.done is True and obs.reward is None
        assert obs.error is not None and "episode is over" in obs.error.message
    assert env.step(ListToolsAction()).done is True
    after = env.state.model_dump()
    assert after == {**before, "step_count": before["step_count"] + 4}  # refused calls are steps, nothing else moves
    assert after["correct"] is True
    env.reset(question_id="q01")
    assert env.state.submitted is False and env.state.step_count == 0


def test_before_reset_the_database_answers_but_there_is_no_question() -> None:
    env = SQLToolsEnvironment()
    assert use(env, "query", sql="SELECT COUNT(*) FROM products").result["data"]["rows"] == [[30]]
    for tool, args in (("get_question", {}), ("submit_answer", {"answer": 1})):
        obs = use(env, tool, **args)
        assert obs.error is not None and "call reset first" in obs.error.message and obs.done is False
    assert env.state.submitted is False


@pytest.mark.parametrize(("tool", "args", "error_type"), [
    ("describe_table", {}, "invalid_args"),
    ("query", {"sql": 5}, "invalid_args"),
    ("query", {"sql": ""}, "invalid_args"),
    ("query", {"sql": "SELECT 1", "limit": 3}, "invalid_args"),
    ("submit_answer", {"answer": {"a": 1}}, "invalid_args"),
    ("drop_everything", {}, "tool_not_found"),
])
def test_invalid_tool_calls_are_errors_that_corrupt_nothing(tool: str, args: dict[str, Any], error_type: str) -> None:
    env = SQLToolsEnvironment()
    env.reset(question_id="q01")
    obs = use(env, tool, **args)
    assert obs.error is not None and obs.error.error_type == error_type
    assert env.state.submitted is False and env.state.step_count == 1
    assert use(env, "submit_answer", answer=60).reward == 1.0


# -- over the wire ---------------------------------------------------------------------------------------
async def test_scripted_agent_plays_through_a_real_server() -> None:
    bank = question_bank()
    async with serve_process("sql_tools") as (endpoint, _provider):
        async with GenericEnvClient(endpoint.base_url, uds=endpoint.uds) as client:
            for qid in ("q04", "q16", "q27"):
                first = await client.reset(question_id=qid, episode_id=qid)
                assert first.observation["question"] == bank[qid].text and first.metadata["question_id"] == qid
                tables = (await client.step(call("list_tables"))).observation["result"]["data"]
                for table in tables:
                    await client.step(call("describe_table", table=table))
                rows = (await client.step(call("query", sql=bank[qid].sql))).observation["result"]["data"]["rows"]
                result = await client.step(call("submit_answer", answer=answer_of(rows)))
                assert (result.reward, result.done) == (1.0, True)
                state = await client.state()
                assert state == {"episode_id": qid, "step_count": 3 + len(tables), "question_id": qid,
                                 "submitted": True, "correct": True}

            await client.reset(seed=5)
            refused = await client.step(call("query", sql="DROP TABLE orders"))
            assert refused.observation["error"]["error_type"] == "execution_error"
            with pytest.raises(ServerError) as info:
                await client.reset(question_id="q99")
            assert info.value.code == "EXECUTION_ERROR" and "no question 'q99'" in info.value.message
            with pytest.raises(ServerError) as info:
                await client.step({"type": "call_tool"})
            assert info.value.code == "VALIDATION_ERROR"
            still = await client.step(call("query", sql="SELECT COUNT(*) FROM orders"))
            assert still.observation["result"]["data"]["rows"] == [[150]]


async def test_openenv_clients_drive_a_real_server() -> None:
    question = question_bank()["q20"]
    async with serve_process("sql_tools") as (endpoint, _provider):
        async with OEGenericEnvClient(base_url=endpoint.base_url) as env:
            first = await env.reset(question_id=question.id)
            assert first.observation["question"] == question.text and first.reward == 0.0
            rows = (await env.step(call("query", sql=question.sql))).observation["result"]["data"]["rows"]
            result = await env.step(call("submit_answer", answer=rows[0][0]))
            assert (result.reward, result.done) == (1.0, True)
            assert (await env.state())["step_count"] == 2

        async with OEMCPToolClient(base_url=endpoint.base_url) as mcp:
            await mcp.reset(question_id="q05")
            names = [t.name for t in await mcp.list_tools()]
            assert names == ["get_question", "list_tables", "describe_table", "query", "submit_answer"]
            asked = await mcp.call_tool("get_question")
            assert asked["question_id"] == "q05"
            assert await mcp.call_tool("list_tables") == ["customers", "order_items", "orders", "products", "reviews"]
            data = await mcp.call_tool("query", sql="SELECT MIN(price) FROM products")
            with pytest.raises(RuntimeError, match="read-only"):
                await mcp.call_tool("query", sql="DELETE FROM products")
            submitted = await mcp.step(OECallToolAction(tool_name="submit_answer", arguments={"answer": data["rows"][0][0]}))
            assert (submitted.reward, submitted.done) == (1.0, True)
            assert submitted.observation.result["data"]["correct"] is True
            state = await mcp.state()
            assert state.step_count == 6 and state.episode_id

        production = OEMCPToolClient(base_url=endpoint.base_url)
        production.use_production_mode = True  # JSON-RPC over POST /mcp, in a session of its own
        try:
            assert len(await production.list_tools()) == 5
            counted = await production.call_tool("query", sql="SELECT COUNT(*) FROM order_items")
            assert counted["rows"] == [[398]]
            with pytest.raises(RuntimeError):
                await production.call_tool("query", sql="PRAGMA writable_schema = ON")
        finally:
            await production.close()
