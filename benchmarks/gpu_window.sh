#!/usr/bin/env bash
# One GPU window of issue 48, in one device call: the data unpacked, the prepared check
# (benchmarks/gpu_check.py: draws and graphs bit-equal, s/round, profiles, the bit checks, several runs),
# then the paper-profile campaign in the seconds left, the stores tarred into $OUT (8 files come
# back, 2 folders deep at most). See benchmarks/GPU_WINDOW.md.
#
#   bash benchmarks/gpu_window.sh                       # on the device machine: cuda, paper
#   DEVICE=cpu PROFILE=smoke TOTAL_S=400 CHECK_MIN=1 ROOT=/tmp/w bash benchmarks/gpu_window.sh   # CPU test
#
# TOTAL_S: seconds the whole script may take (default 560: a 600 s call with a margin);
# CHECK_MIN: minutes of the check (default 4.5); SEVERAL=0: the check without its sections of several
# runs at once (MPS, stacked, processes: measured in the third and fourth windows), so it ends with
# its bit checks and the decision row; PROBE=1: then the probe of a torch.compile'd gradient (its
# compilation and timings take ~40-80 s of the campaign's time); NB: the campaign's notebooks (default 02 then 08);
# ROOT: the folder whose results/<notebook>/<profile> hold the stores (default: the repository);
# UNPACK=0: leave data/ as it is where .gpu-data/ is here too (the tests, on this machine);
# GRAPHS: 1 / 0 forces CUDA-graph steps on / off (default: on when the check's graph row is True);
# COMPILED_DRAWS: 1 / 0 forces the campaign's --compiled-draws on / off (default: on when the check's
# compiled-draws bit row is True); CLIENTS_INNERMOST: 1 / 0 forces --clients-innermost on / off (default:
# on when the check's "clients innermost for the campaign" row is True: faster, bit-equal twice and to
# verify's replay, within CROSS_RTOL of the CPU; only with graphs and compiled draws on and
# NB=02_fedsum_main, the path and model it measured); GROUPED_LAYOUT: 1 / 0 forces --grouped-layout
# on / off (default: on where the row "grouped layout for the campaign" is True, on the same terms and
# with the clients not innermost). A second call (CHECK_MIN=0) decides from the first call's check,
# kept in $STASH/gpu_check.log. STASH: a folder the device tool's warm machine keeps between calls
# (default data/, ignored by git); each call's stores go to $STASH/stores.tgz too, and a later call
# unpacks them first: the tool copies the working tree afresh for each call, so the tracked
# results/*/paper would otherwise lose the entries an earlier call computed, and the later call would
# compute them again (the fifth window's did: three runs, bit-equal to the first call's).
set -u
start=$(date +%s)
DEVICE=${DEVICE:-cuda}
PROFILE=${PROFILE:-paper}
TOTAL_S=${TOTAL_S:-560}
CHECK_MIN=${CHECK_MIN:-4.5}
NB=${NB:-"02_fedsum_main 08_amplified_fedavg"}
ROOT=${ROOT:-$PWD}
out=${OUT:-$ROOT/gpu-window-out}
mkdir -p "$out" "$ROOT"
PY=${PY:-python3}
[ "${UNPACK:-1}" = 1 ] && [ -d .gpu-data ] && $PY benchmarks/gpu_window.py unpack
[ -d data ] && export FEDLIB_DATA=$PWD/data
STASH=${STASH:-data}
if [ -f "$STASH/stores.tgz" ]; then            # an earlier call's entries on this warm machine
  echo "== entries of an earlier call ($STASH/stores.tgz): unpacked where the tree lacks them"
  tar xzf "$STASH/stores.tgz" -C "$ROOT" --skip-old-files
fi
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 CUBLAS_WORKSPACE_CONFIG=:4096:8
check=(--device "$DEVICE" --minutes "$CHECK_MIN" --mps-runs 8 --stack 16 8 --runs 8)
[ "${SEVERAL:-1}" = 0 ] && check=(--device "$DEVICE" --minutes "$CHECK_MIN" --mps-runs --stack --runs)
[ "${PROBE:-0}" = 1 ] && check+=(--probe-compiled-gradient)
[ "$DEVICE" = cpu ] && check+=(--rounds 1)
if [ "$CHECK_MIN" != 0 ]; then               # CHECK_MIN=0: the campaign alone (a second call)
  timeout "$($PY -c "print(int($CHECK_MIN * 60 + 120))")" $PY benchmarks/gpu_check.py "${check[@]}" 2>&1 \
    | tee "$out/gpu_check.log"
  [ -d "$STASH" ] && cp "$out/gpu_check.log" "$STASH/gpu_check.log"   # for a second call (unpacked data only)
  # the check stops its MPS daemon itself; one it could not stop (or a killed check's) is told again
  for pipe in "${TMPDIR:-/tmp}"/fedlib-mps-*/pipe; do
    [ -d "$pipe" ] || continue
    echo "== MPS daemon left in $pipe: quit"
    echo quit | CUDA_MPS_PIPE_DIRECTORY=$pipe CUDA_MPS_LOG_DIRECTORY=${pipe%/pipe}/log timeout 60 nvidia-cuda-mps-control
  done
  log=$out/gpu_check.log
else
  log=$STASH/gpu_check.log                   # the first call's check, where this machine ran it
  if [ ! -f "$log" ]; then                   # a fresh machine (the warm one went back): no check here
    log=/dev/null
    echo "== no check log on this machine: graphs / compiled draws / clients innermost / grouped layout" \
         "only where GRAPHS=1 / COMPILED_DRAWS=1 / CLIENTS_INNERMOST=1 / GROUPED_LAYOUT=1 say"
  fi
fi
graphs=()                                   # GRAPHS=1 / 0 decide; by default the check's graph row does
if [ "${GRAPHS:-auto}" = 1 ] || { [ "${GRAPHS:-auto}" = auto ] &&
     grep -q "CUDA-graph step vs plain step: bit-equal | True (captured" "$log"; }; then
  graphs=(--graphs)
fi
if [ "${COMPILED_DRAWS:-auto}" = 1 ] || { [ "${COMPILED_DRAWS:-auto}" = auto ] &&   # the library's row
     grep -q "compiled draws (library, compiled_draws=True) on the device vs CPU: bit-equal | True (" "$log"; }; then
  graphs+=(--compiled-draws)
fi
# the options of the check's decision rows (faster, bit-equal twice, to verify's replay, within
# CROSS_RTOL): auto takes one only on the path its row measured (graphs and compiled draws; the
# grouped layout with the clients not innermost) and for notebook 02 alone (the rows measured App.
# H's CNN; another notebook's model is not measured)
on() { printf '%s\n' "${graphs[@]}" | grep -qx -- "$1"; }
measured() { on --graphs && on --compiled-draws && [ "$NB" = 02_fedsum_main ] && grep -q "$1 | True (" "$log"; }
if [ "${CLIENTS_INNERMOST:-auto}" = 1 ] || { [ "${CLIENTS_INNERMOST:-auto}" = auto ] &&
     measured "clients innermost for the campaign"; }; then
  graphs+=(--clients-innermost)
fi
if [ "${GROUPED_LAYOUT:-auto}" = 1 ] || { [ "${GROUPED_LAYOUT:-auto}" = auto ] && ! on --clients-innermost &&
     measured "grouped layout for the campaign"; }; then
  graphs+=(--grouped-layout)
fi
left=$($PY -c "import time; print(round(max(0.0, ($TOTAL_S - (time.time() - $start)) / 60 - 0.5), 2))")
echo "== campaign: $NB, $PROFILE profile, $DEVICE ${graphs[*]:-}, budget $left min"
# shellcheck disable=SC2086
$PY -m fedlib campaign $NB --profile "$PROFILE" --device "$DEVICE" --budget-min "$left" --root "$ROOT" \
  "${graphs[@]}" 2>&1 | tee "$out/campaign.log"
(cd "$ROOT" && tar czf "$out/stores.tgz" results/*/"$PROFILE" 2>/dev/null)
[ -d "$STASH" ] && cp "$out/stores.tgz" "$STASH/stores.tgz"   # for a later call on this machine
ls -la "$out"
echo "window script: $(( $(date +%s) - start )) s"
