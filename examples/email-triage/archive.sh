#!/bin/sh
# A flaky archiver: the first attempt fails, the next one succeeds.
if [ ! -f .archive-tried ]; then
  touch .archive-tried
  echo "archive service unavailable" >&2
  exit 75
fi
echo '{"archived": 4}'
