#!/usr/bin/python3
"""Renders every supported family's real chat template over the shared conversations with
Python jinja2, set up as Hugging Face transformers' apply_chat_template sets it up
(transformers/utils/chat_template_utils.py):

  * ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the loopcontrols
    extension and transformers' {% generation %} tag (its AssistantTracker, which renders the
    body unchanged when no assistant mask is requested);
  * the `tojson` filter replaced by json.dumps(x, ensure_ascii=False, indent=None,
    separators=None, sort_keys=False);
  * globals raise_exception(message) (a TemplateError) and strftime_now(format), here on the
    fixed date and time of family_conversations.json instead of datetime.now();
  * render(messages=..., tools=<list or None>, documents=None, add_generation_prompt=...,
    bos_token/eos_token (when the tokenizer has one), **kwargs).

Usage: render_family_templates.py OUT.json [--shared DIR] [--conversations FILE]
Writes one JSON object: the conversations file it read (so a stale file is detected), the jinja2
version, and one entry per (family, case, add_generation_prompt) with the messages, tools and
kwargs it rendered and either "expected" (the rendering) or "error" (what jinja2 raised).
Without ../shared it writes nothing and exits 0: the C++ test skips on the missing assets.
"""
import argparse
import datetime
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def make_environment(fixed_now):
    import jinja2
    import jinja2.ext
    from jinja2 import nodes
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class GenerationTag(jinja2.ext.Extension):
        # transformers' {% generation %}...{% endgeneration %}: a call block whose body is
        # rendered as is (the tracker only records offsets when an assistant mask is asked for).
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return fixed_now.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTag, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def read_template(shared, family):
    path = os.path.join(shared, family["template"])
    with open(path, encoding="utf-8") as f:
        text = f.read()
    key = family.get("template_key")
    return json.loads(text)[key] if key else text


def expand_cases(spec):
    """(family, case, add_generation_prompt) in file order; the C++ test counts the same."""
    for fi, family in enumerate(spec["families"]):
        for ci, case in enumerate(family["cases"]):
            prompts = [case["add_generation_prompt"]] if "add_generation_prompt" in case else [True, False]
            for agp in prompts:
                yield fi, ci, family, case, agp


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--shared", default=os.path.join(os.path.dirname(REPO), "shared"))
    parser.add_argument("--conversations", default=os.path.join(HERE, "family_conversations.json"))
    args = parser.parse_args()

    if not os.path.isdir(os.path.join(args.shared, "assets")):
        print(f"render_family_templates: {args.shared}/assets not found, nothing rendered "
              "(the C++ test skips without ../shared)")
        return 0
    try:
        import jinja2
    except ImportError:
        print("render_family_templates: python3 cannot import jinja2 (apt-get install python3-jinja2)", file=sys.stderr)
        return 1

    with open(args.conversations, encoding="utf-8") as f:
        spec = json.load(f)
    now = spec["fixed_now"]
    fixed_now = datetime.datetime(now["year"], now["month"], now["day"], now["hour"], now["minute"], now["second"])
    env = make_environment(fixed_now)

    compiled = {}
    cases = []
    for fi, ci, family, case, agp in expand_cases(spec):
        if fi not in compiled:
            compiled[fi] = env.from_string(read_template(args.shared, family))
        messages = spec["conversations"][case["conversation"]]
        tools = spec["tool_sets"][case["tools"]] if case.get("tools") else None
        kwargs = case.get("kwargs", {})
        variables = {}
        for name in ("bos_token", "eos_token"):
            if family[name] is not None:
                variables[name] = family[name]
        variables.update(kwargs)
        entry = {
            "id": f"{family['family']} #{ci} {case['conversation']}{' tools=' + case['tools'] if case.get('tools') else ''}"
                  f"{' ' + json.dumps(kwargs, ensure_ascii=False) if kwargs else ''} add_generation_prompt={str(agp).lower()}",
            "family": family["family"],
            "template": family["template"],
            "template_key": family.get("template_key"),
            "bos_token": family["bos_token"],
            "eos_token": family["eos_token"],
            "messages": messages,
            "tools": tools,
            "kwargs": kwargs,
            "add_generation_prompt": agp,
        }
        try:
            entry["expected"] = compiled[fi].render(messages=messages, tools=tools, documents=None,
                                                    add_generation_prompt=agp, **variables)
            entry["error"] = None
        except Exception as e:  # what jinja2 raises (TemplateError, TypeError, SecurityError, ...)
            entry["expected"] = None
            entry["error"] = f"{type(e).__name__}: {e}"
        cases.append(entry)

    out = {
        "about": "Generated by tests/engine/chat/render_family_templates.py; do not edit.",
        "jinja2_version": jinja2.__version__,
        "conversations": spec,
        "cases": cases,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    os.replace(tmp, args.out)
    errors = sum(1 for c in cases if c["error"])
    print(f"render_family_templates: {len(cases)} renderings of {len(spec['families'])} templates "
          f"({errors} expected errors) with jinja2 {jinja2.__version__} -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
