"""Regenerate ``answers.txt`` and ``valid_guesses.txt`` from two MIT-licensed PyPI packages.

Run from the repository root (needs network access to PyPI once, for the two build-time packages;
the env itself never imports them)::

    pip install english-words==2.0.2 symspellpy==6.10.1
    python openenv_train/envs/wordle/data/build_wordlists.py

Sources:
    * ``english-words`` 2.0.2 (MIT): its ``web2`` list, Webster's Second International
      dictionary (1934, public domain) as shipped by FreeBSD. Lowercase entries only, so the
      capitalised proper nouns drop out.
    * ``symspellpy`` 6.10.1 (MIT): ``frequency_dictionary_en_82_765.txt``, SymSpell's English
      frequency list (SCOWL word list intersected with Google Books Ngram counts). It supplies the
      commonness ranking and the inflected forms (plurals, past tenses) that web2 lacks.

Filters:
    * valid guesses: every lowercase a-z 5-letter word of web2, plus every 5-letter word of the
      frequency list that is a regular inflection (-s, -es, -ies, -ed, -ied, -er, -ing, -ly) of a
      lowercase web2 word; so ``cakes`` and ``asked`` are guessable, ``nokia`` and ``david`` are not.
    * answers: 5-letter words in both sources, ranked by frequency, minus plurals and ``-ed`` forms
      of a web2 word, minus words that web2 also lists capitalised unless SymSpell's bigram list
      shows them after or before function words (``the price``, ``to carry``; not ``harry``),
      minus :data:`EXCLUDED` (names, places, brands, foreign words, jargon, vulgar or offensive
      words), keeping the :data:`ANSWER_COUNT` most frequent.

The answers are a subset of the valid guesses; both files are sorted, one word a line.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

ANSWER_COUNT = 2000
FIVE = re.compile(r"[a-z]{5}")
LOWER = re.compile(r"[a-z]+")
CAPITALISED = re.compile(r"[A-Z][a-z]+")
FUNCTION_BEFORE = ("the", "a", "an", "to", "i", "we", "they", "you", "very", "so", "more", "most", "this", "that",
                   "is", "be", "his", "her", "their", "our", "my", "your", "its")
FUNCTION_AFTER = ("the", "a", "an", "to", "it", "them", "up", "out")

#: Frequent words that make poor secrets, reviewed by hand over the ~2,300 most frequent candidates.
EXCLUDED = frozenset("""
    abbas acton albee alamo amman arles astor barth beano bilbo bizet bosch bowie boyer brill brock burke busby
    cabot campo camus chevy chile china ching claro clint clive compo conte conto corse costa cotta daman darby
    degas delft derry dover dunne erika faust fiche fitch flite frith garth ghazi gluck hakim hamza hanna havel
    herne hight hogan hondo honda hough hoyle hurst jenna jerez josie julio kraft kroon lazar leger levin litas
    livre macao marge maris mavis merle metis minot mirza morin odeon palma patel penna playa porto prius rabat
    reese rhine riley ronde roque ryder savoy scala serra seton silva singh sloan snell speer spiro spode stang
    stine sucre sulla surat tabor tania thorp tibet trier tutti twain varna walsh waugh weber wigan wight xenia
    zante zorro smith bally noddy tanga situs culpa duper droit blanc carte petit hydro infra inter macro micro
    ultra nitro admin login recon redux retry covid demos semis taxis ashes skies elves radii dried cried fried
    boner booty butch dildo enema horny hymen kinky labia panty penis pubic pussy semen sissy spank sperm titty
    twink vulva whore bitch idiot moron bigot ganja kraut squaw queer jihad lynch slave wench trump mensa buffy
""".split())


def web2_words() -> tuple[set[str], set[str]]:
    """The lowercase web2 entries, and the lowercased forms of its capitalised (proper noun) entries."""
    from english_words import get_english_words_set

    words = get_english_words_set(["web2"], lower=False, alpha=False)
    return ({w for w in words if LOWER.fullmatch(w)},
            {w.lower() for w in words if CAPITALISED.fullmatch(w)})


def symspell_frequencies() -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """SymSpell's unigram counts and bigram counts, read from the installed ``symspellpy``."""
    base = resources.files("symspellpy")
    unigrams = {}
    for line in (base / "frequency_dictionary_en_82_765.txt").read_text(encoding="utf-8").splitlines():
        word, count = line.split()
        unigrams[word] = int(count)
    bigrams: dict[tuple[str, str], int] = defaultdict(int)
    for line in (base / "frequency_bigramdictionary_en_243_342.txt").read_text(encoding="utf-8").splitlines():
        first, second, count = line.split()
        bigrams[first, second] = int(count)
    return unigrams, bigrams


def stems(word: str) -> list[str]:
    """Candidate base forms of a regularly inflected word."""
    out: list[str] = []
    if word.endswith("s"):
        out += [word[:-1]]
    if word.endswith("es"):
        out += [word[:-2]]
    if word.endswith(("ies", "ied")):
        out += [word[:-3] + "y"]
    if word.endswith("ed"):
        out += [word[:-1], word[:-2], word[:-3]]
    if word.endswith("er"):
        out += [word[:-1], word[:-2]]
    if word.endswith("ing"):
        out += [word[:-3], word[:-3] + "e"]
    if word.endswith("ly"):
        out += [word[:-2]]
    return [s for s in out if len(s) >= 2]


def is_plural_or_past(word: str, lower: set[str]) -> bool:
    """A plural or ``-ed`` form of a web2 word (Wordle answers avoid these)."""
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and word[:-1] in lower:
        return True
    return word.endswith("ed") and (word[:-1] in lower or word[:-2] in lower)


def common_noun_score(word: str, unigrams: dict[str, int], bigrams: dict[tuple[str, str], int]) -> float:
    """How often a word sits next to function words, per occurrence: low for personal names."""
    near = sum(bigrams.get((f, word), 0) for f in FUNCTION_BEFORE)
    near += sum(bigrams.get((word, f), 0) for f in FUNCTION_AFTER)
    return near / unigrams[word]


def build() -> tuple[list[str], list[str]]:
    """The sorted answer list and the sorted valid-guess list."""
    lower, capitalised = web2_words()
    unigrams, bigrams = symspell_frequencies()
    web2_five = {w for w in lower if FIVE.fullmatch(w)}
    freq_five = {w for w in unigrams if FIVE.fullmatch(w)}
    inflected = {w for w in freq_five - web2_five if any(s in lower for s in stems(w))}
    valid = web2_five | inflected
    ranked = sorted(freq_five & web2_five, key=lambda w: (-unigrams[w], w))
    answers = [
        w for w in ranked
        if w not in EXCLUDED and not is_plural_or_past(w, lower)
        and not (w in capitalised and common_noun_score(w, unigrams, bigrams) < 1.0)
    ][:ANSWER_COUNT]
    if len(answers) < ANSWER_COUNT or not set(answers) <= valid:
        raise SystemExit("answer list is short or not a subset of the valid guesses")
    return sorted(answers), sorted(valid)


def write(path: Path, words: Iterable[str]) -> None:
    path.write_text("".join(f"{w}\n" for w in words), encoding="ascii")


def main() -> int:
    answers, valid = build()
    here = Path(__file__).resolve().parent
    write(here / "answers.txt", answers)
    write(here / "valid_guesses.txt", valid)
    print(f"{len(answers)} answers, {len(valid)} valid guesses written to {here}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
