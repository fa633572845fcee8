"""Reading a live region's poll URL out of its HTML."""

import re


def poll_url_of(html: str) -> str:
    return re.search(r'hx-get="([^"]+stamp=[^"]+)"', html).group(1).replace("&amp;", "&")
