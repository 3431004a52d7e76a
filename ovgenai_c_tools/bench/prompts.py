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



# The lookup section (prompt-lookup decoding): work grounded in the input, where the answer repeats long runs of
# the prompt (written for this benchmark), and open-ended prompts, where it repeats little.
_REWRITE_TEXT = (
    "Our team meet every monday at nine o'clock to review the progres of the project. Last week we finished the "
    "new login page, but the tests for the payment module are still failling on the staging server. Maria will "
    "investigate the problem with the database conection, and Tom will update the documentation before the "
    "release. If anyone has questions about the schedule, please send them to the project manager by wenesday "
    "so that we can discuss them in the next meeting.")
_JSON_DOC = (
    '{"order_id": "A-10293", "created": "2026-11-30T14:22:05Z", "status": "shipped",\n'
    ' "customer": {"name": "Helena Varga", "email": "helena.varga@example.org", "phone": "+36 1 555 0199",\n'
    '              "address": {"street": "Kossuth Lajos utca 12", "city": "Budapest", "postcode": "1053",\n'
    '                          "country": "Hungary"}},\n'
    ' "items": [{"sku": "KB-204", "title": "Mechanical keyboard", "quantity": 1, "unit_price": 89.90},\n'
    '           {"sku": "MS-118", "title": "Wireless mouse", "quantity": 2, "unit_price": 24.50}],\n'
    ' "shipping": {"carrier": "DHL", "tracking": "JD014600003846219921", "cost": 6.99},\n'
    ' "total": 145.89, "currency": "EUR"}')
_CODE_FILE = (
    "import json\n\n\n"
    "def load_settings(path):\n"
    "    with open(path) as f:\n"
    "        data = json.load(f)\n"
    "    settings = {}\n"
    "    for key, value in data.items():\n"
    "        if key.startswith('_'):\n"
    "            continue\n"
    "        settings[key] = value\n"
    "    return settings\n\n\n"
    "def save_settings(path, settings):\n"
    "    with open(path, 'w') as f:\n"
    "        json.dump(settings, f, indent=2)\n\n\n"
    "def update_setting(path, key, value):\n"
    "    settings = load_settings(path)\n"
    "    settings[key] = value\n"
    "    save_settings(path, settings)\n"
    "    return settings\n")
_ARTICLE = (
    "The city council voted on Tuesday to turn the old railway depot into a public library and community centre. "
    "\"This building has been empty for twenty years, and now it will finally serve the people who live around "
    "it,\" said council member Ana Ruiz. The project will cost about four million euros, most of it paid by a "
    "regional grant. Local shop owners welcomed the decision. \"More visitors in the neighbourhood means more "
    "customers for all of us,\" said Peter Lind, who runs a bakery on the same street. Construction is expected "
    "to start next spring and to take eighteen months.")
LOOKUP_GROUNDED = {
    "rewrite": "Correct the spelling mistakes in the following paragraph. Return the whole corrected paragraph and "
               "nothing else.\n\n" + _REWRITE_TEXT,
    "extract_json": "From this JSON order, list the customer's name, email, phone, street, city, postcode and "
                    "country, and every item's sku, title and quantity, one field per line as 'field: value'.\n\n"
                    + _JSON_DOC,
    "edit_code": "Rename the function load_settings to read_settings everywhere in this Python file and return "
                 "the complete file.\n\n" + _CODE_FILE,
    "summarise_quotes": "Summarise this article in three sentences and quote both people exactly as they are "
                        "quoted in it.\n\n" + _ARTICLE,
}
LOOKUP_OPEN = {
    "story": "Write a short story about a robot who learns to paint.",
    "explain": "Explain how vaccines train the immune system.",
    "advice": "Give me some advice for my first week at a new job.",
    "poem": "Write a poem about the first snow of winter.",
}
