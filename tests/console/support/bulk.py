"""Reading the bulk confirmation page: its form fields and its eligible rows."""

import re


def hidden(html, name):
    return re.findall(rf'<input type="hidden" name="{name}" value="([^"]*)">', html)


def confirmed(html):
    """The confirmation's form fields, as the browser would post them back."""
    fields = {n: hidden(html, n)[0] for n in ("do", "from", "through") if hidden(html, n)}
    fields["token"] = re.search(r'name="token" value="([^"]+)"', html).group(1)
    for name in ("state", "kind", "source", "scope", "within", "since", "until"):
        if hidden(html, name):
            fields[name] = hidden(html, name)
    return fields


def eligible_rows(html):
    section = html.split('id="eligible"')[1].split('id="excluded"')[0]
    return re.findall(r'<a class="mono" href="/works/([^"]+)">', section)
