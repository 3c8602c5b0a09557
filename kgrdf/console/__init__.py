"""kg console: the knowledge base as web pages for the person who owns it (SPEC §10).

``pages`` builds each page's document (its JSON twin) from the same library calls as the CLI;
``web`` serves them on loopback behind a per-start token, a session cookie and, for the one write
(review decisions), an Origin check and a CSRF token; ``static/`` holds the page's HTML, CSS and
script, drawn in the browser with no build step.
"""
