"""The prompts the benchmark sends: the standard one, the greedy-agreement set, filler text for long prompts,
and the per-request number that keeps prompt-prefix caches cold."""
from __future__ import annotations

import threading
from typing import Any, Dict

STANDARD_PROMPT = "What is the capital of France?"
AGREEMENT_PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain what a hash table is in two sentences.",
    "List three uses of copper.",
    "Why is the sky blue?",
    "Give me a short recipe for pancakes.",
    "What is 17 times 23?",
    "Translate 'good morning' into Spanish and German.",
    "Describe the water cycle briefly.",
    "Name four planets of the solar system.",
    "What does a compiler do?",
    "Suggest a name for a black cat.",
]
# Filler for long prompts (written for this benchmark; plain ASCII English so every vocabulary covers it).
FILLER = (
    "The old lighthouse keeper climbed the spiral stairs every evening at dusk, counting the one hundred and "
    "twelve steps as his father had done before him. From the lamp room he could see the harbour, the fishing "
    "boats returning with their nets, and the long road that wound along the cliffs toward the market town. "
    "In winter the storms came from the north, and the waves broke so high against the rocks that the spray "
    "reached the windows of the cottage below. He kept a logbook of every ship that passed, noting its name, "
    "its flag, the direction of the wind and the colour of the sky. Over forty years the book had grown into "
    "eleven volumes, and the children of the village sometimes asked to read the pages that described the "
    "great gale, when three ships sheltered in the bay for a week and the sailors played music in the tavern "
    "every night. Summer brought calmer water, tourists with cameras, and the smell of salt and fresh bread "
    "from the bakery near the pier. "
)

NONCE_SAMPLE = "Request 00000: "  # the shape of the per-request number (for token counts)
_nonce_lock = threading.Lock()
_nonce = [0]


def prompt_for(req: Dict[str, Any]) -> str:
    """The prompt of a request; with ``fresh`` it starts with a per-request number (same token count each time) so
    no engine measures a warm prefix: GenAI's default backend caches prompt prefixes (in whole KV blocks), and a
    repeated prompt would otherwise be timed warm. Plain strings, never chat histories: a stateful pipeline refuses
    to switch input types between calls, and reuses the KV cache of a history's common prefix."""
    if not req.get("fresh"):
        return req["prompt"]
    with _nonce_lock:
        _nonce[0] += 1
        n = _nonce[0]
    return f"Request {n % 100000:05d}: {req['prompt']}"

