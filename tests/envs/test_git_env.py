"""The git env: bundled tasks solved and graded, hung commands, hidden checks, custom tasks, both clients."""

from __future__ import annotations

import pytest
from openenv.core import GenericEnvClient as OEGenericEnvClient
from pydantic import ValidationError

from openenv_train.envs.git_repo import GitAction, GitEnv, GitEnvironment, bundled_git_tasks, choose_git_task
from tests import _system_parts
from tests.conftest import serve_inloop
from tests.sandbox.conftest import require_sandbox

# Reference solutions (kept out of the package: sandboxed code can read it).
SOLUTIONS = {
    "add_file": "printf 'hello world\\n' > hello.txt && git add hello.txt && git commit -qm 'add hello'",
    "fix_typo": "sed -i 's/teh/the/g' notes.txt && git commit -qam 'fix typo'",
    "feature_branch": "git checkout -qb feature && printf 'new feature\\n' > feature.txt && git add feature.txt "
                      "&& git commit -qm feature && git checkout -q main",
    "merge_conflict": "git merge other; printf 'name = demo\\ncolor = green\\nsize = 3\\n' > config.ini "
                      "&& git add config.ini && git commit -q --no-edit",
    "revert_commit": "git revert --no-edit HEAD~1",
    "tag_release": "git tag -a v1.0 -m 'release 1.0' main~1",
}


def test_bundled_tasks_have_solutions_and_choice_errors_name_the_fix() -> None:
    assert {t.id for t in bundled_git_tasks()} == set(SOLUTIONS)
    assert choose_git_task(seed=3) == choose_git_task(seed=3)
    with pytest.raises(ValueError, match="did you mean 'add_file'"):
        choose_git_task(task_id="add_fil")
    with pytest.raises(ValueError, match="not both"):
        choose_git_task(task_id="add_file", task={"prompt": "p", "checks": [{"name": "n", "command": "true"}]})
    with pytest.raises(ValidationError):
        GitAction(command=5)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        GitAction(command="a\0b")


async def test_solutions_score_one_unsolved_repos_less_and_the_checks_are_hidden() -> None:
    require_sandbox()
    _system_parts.require("git")
    env = GitEnvironment(wall_time_s=2.0)
    try:
        await env.reset(task_id="revert_commit")
        done = await env.step(GitAction(command=SOLUTIONS["revert_commit"], submit=True))
        assert done.done and done.reward == 1.0 and done.checks_passed == done.checks_total == 5

        await env.reset(task_id="merge_conflict")
        peek = await env.step(GitAction(command="cat \"$(python3 -c 'import openenv_train.envs.git_repo as g, os; "
                                                "print(os.path.dirname(g.__file__))')/tasks.json\""))
        assert "color = green" not in peek.stdout
        conflict = await env.step(GitAction(command="git merge other"))
        assert conflict.exit_code != 0 and "CONFLICT" in conflict.stdout
        hung = await env.step(GitAction(command="sleep 30"))
        assert hung.timed_out and hung.killed_reason == "wall_time"
        half = await env.step(GitAction(command="git add config.ini && git commit -q --no-edit", submit=True))
        assert half.done and half.reward is not None and 0.0 < half.reward < 1.0
        assert [c.name for c in half.check_results if not c.passed] == ["resolved"]
        late = await env.step(GitAction(command="true"))
        assert late.error is not None and "reset()" in late.error and env.state.step_count == 4

        custom = {"id": "two_commits", "prompt": "Make a second commit.", "setup": "git commit -q --allow-empty -m one",
                  "checks": [{"name": "two", "command": 'test "$(git rev-list --count HEAD)" = 2'}]}
        ids = []
        for _ in range(2):
            await env.reset(task=custom)  # type: ignore[arg-type]
            made = await env.step(GitAction(command="git commit -q --allow-empty -m two && git rev-parse HEAD",
                                            submit=True))
            assert made.reward == 1.0
            ids.append(made.stdout)
        assert ids[0] == ids[1], "a fixed identity and clock give the same commit ids"
        with pytest.raises(ValueError, match="setup script"):
            await env.reset(task={"prompt": "p", "setup": "exit 3", "checks": custom["checks"]})  # type: ignore[arg-type]
    finally:
        env.close()


async def test_openenv_generic_client_and_the_typed_client_solve_tasks_over_the_wire() -> None:
    require_sandbox()
    _system_parts.require("git")
    async with serve_inloop(GitEnvironment) as server:
        async with OEGenericEnvClient(base_url=server.url) as oe:
            first = await oe.reset(task_id="merge_conflict")
            assert "color = green" in first.observation["prompt"] and first.done is False
            result = await oe.step({"command": SOLUTIONS["merge_conflict"], "submit": True})
            assert result.done is True and result.reward == 1.0
        async with GitEnv(base_url=server.url) as env:
            await env.reset(task_id="feature_branch")
            typed = await env.step(GitAction(command=SOLUTIONS["feature_branch"], submit=True))
            assert typed.done and typed.reward == 1.0 and typed.observation.checks_total == 6
