"""verifiers (PyPI ``verifiers==0.4.0``, its v1 API; prime-rl's environments): any env of ours as a taskset.

verifiers loads a taskset by a top-level module name, so an env of ours becomes an installable environment
package::

    openenv-train export verifiers wordle ./wordle-vf      # pyproject.toml + openenv_wordle.py
    pip install ./wordle-vf
    vf-eval openenv-wordle --no-push -n 4 -m default --client.base-url http://127.0.0.1:8001/v1 \\
        --env.player.runtime.type subprocess --env.player.harness.id null

The package's module exports the classes :func:`verifiers_classes` builds. Its ``Env.run`` starts (once per
``vf-eval`` run) a server of the env, or connects to a URL, and plays each task through our client: task ``i``
resets with ``seed + i`` (and ``resets[i]`` when given), the reset observation is the first user turn, each reply
becomes an action and each next observation the next user turn, until the env says done or ``max_turns``. Actions:

- ``message``: the whole reply is ``{"message": reply}`` (Wordle and chat-like envs);
- ``json``: the reply's JSON object is the action (else ``{"message": reply}``), the action's JSON schema is in
  the system prompt;
- ``tool_call``: an MCP env, its tools as native tool calls: the model is offered the env's tools as OpenAI
  ``tools``, each of its ``tool_calls`` is a ``call_tool`` step of the episode's env session and the step's
  observation (JSON) goes back as a ``role: tool`` message, as our own ``ToolAgent`` plays. The reset observation
  is the one user turn; the episode ends when the env says done, the model answers without a tool call, or
  ``max_turns`` model turns were taken. The tools reach the harness as verifiers does it, as a task's MCP tool
  server (``Task.toolsets``), served from the process that holds the env session (see ``_tools``): the
  harness must support MCP (the ``null`` harness does);
- ``tool``: an MCP env for harnesses without tools: the first user turn lists its tools and the reply's JSON object
  ``{"tool": NAME, "arguments": {...}}`` is one tool call.

``auto`` picks ``message`` for Wordle, ``tool_call`` for an MCP env (``tool`` where the harness does not support
MCP), else ``json``. The trace's rewards: ``env_reward`` (weight 1: the sum of step rewards, what our own episodes
return) and each rubric component the env reports in its last observation's ``info.reward_signals`` or
``metadata.rubric`` (weight 0, so the trace's reward is the env's); its metrics: ``turns`` (model turns) and
``done``.

Model calls go through verifiers' own client to ``--client.base-url``: our
:class:`~openenv_train.policy.PolicyServer` records them when the API key (``--client.api-key-var``) names an
open capture session.
"""

from ._episode import EpisodeResult, parse_action, play_episode, render
from ._errors import VerifiersError, VerifiersNotInstalled
from ._export import export_package, package_name
from ._taskset import ACTION_KINDS, INSTALL, OPTIONS, check_options, import_verifiers, verifiers_classes

__all__ = ["ACTION_KINDS", "INSTALL", "OPTIONS", "EpisodeResult", "VerifiersError", "VerifiersNotInstalled",
           "check_options", "export_package", "import_verifiers", "package_name", "parse_action", "play_episode",
           "render", "verifiers_classes"]
