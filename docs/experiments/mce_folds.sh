#!/usr/bin/env bash
# MAP against MCE-F on 5 held-out folds of the CoNLL-2000 training set (docs/mce.md, item 8).
#
#   bash docs/experiments/mce_folds.sh TRAIN OUT [FOLDS...]
#   ORDER=2 SIGMA=3 WEAK=0 bash docs/experiments/mce_folds.sh TRAIN OUT   # the order-2 chunker, no weak start
#   SIGMA=3 MAP_ITER=150 POOLED_ITER=9 WEAK=0 OPTIONS="--columns word,pos,chunk,ner --target ner --template ner" \
#       bash docs/experiments/mce_folds.sh eng.train.iob2 OUT                # CoNLL-2003 NER (IOB2, fstcrf convert)
#
# TRAIN is conll2000/train.txt; OUT a folder for the folds, models and logs.
# Fold k is the k-th of 5 contiguous blocks of sentences; each is scored by
# models trained on the other four, with the counts fixed beforehand (those
# chosen on the 8,000 / 936 dev split, docs/mce.md):
#   map1    MAP sigma $SIGMA (default 1), $MAP_ITER (default 200) L-BFGS iterations, order $ORDER (default 1)
#   mce1    MCE-F from map1, C 1e7, 4 and 20 iterations
#   map03   MAP sigma 0.3, 49 iterations (the weak start; skipped with WEAK=0)
#   mce03   MCE-F from map03, C 1e7, 73 iterations (skipped with WEAK=0)
# MCE-F runs with --dev on the fold only to log its F1 after every iteration;
# the figures are read at the fixed iterations, never at the best one.
# Prints one line per fold: map1 mce1@4 mce1@20 map03 mce03@73 (chunk F1).
# OPTIONS are added to every training command; ITER_CAP (default: none) caps every
# iteration count above, for a quick run (CI runs fold 0 with ITER_CAP=2).
# Then, once every fold is done, the $POOLED_ITER-iteration (default 4) MCE-F model of each fold
# (trained again without --dev) and map1 tag their folds, and the whole
# training set so tagged is scored and compared by McNemar's test.
# A step whose output exists is skipped, so an interrupted run resumes.
set -euo pipefail
train=$1 out=$2
shift 2
folds=("$@")
order=${ORDER:-1} sigma=${SIGMA:-1} weak=${WEAK:-1} map_iter=${MAP_ITER:-200} pooled=${POOLED_ITER:-4}
read -r -a options <<< "${OPTIONS:-}"
# cap N: N, or ITER_CAP when that is set and smaller
cap() { if [ -n "${ITER_CAP:-}" ] && [ "$1" -gt "$ITER_CAP" ]; then echo "$ITER_CAP"; else echo "$1"; fi; }
[ ${#folds[@]} -gt 0 ] || folds=(0 1 2 3 4)
mkdir -p "$out"
total=$(awk 'BEGIN{RS=""} END{print NR}' "$train")

# run OUTPUT LOG COMMAND...: run COMMAND, logging to LOG, unless OUTPUT exists
run() { local output=$1 log=$2; shift 2; [ -s "$output" ] || "$@" > "$log" 2>&1; }
f1_of() { fstcrf eval -q "$1" "$2" | awk '/FB1:/{print $NF; exit}'; }
# the F1 after iteration $2, or after the last one (marked *) if the line search stopped earlier
f1_at() { awk -v it="$2" '$1=="mce-f" {n=$3+0; f=$NF; if (n==it) {print f; found=1; exit}}
                          END {if (!found) print f "*"}' "$1"; }

for k in "${folds[@]}"; do
    d=$out/fold$k
    mkdir -p "$d"
    awk -v k="$k" -v n="$total" 'BEGIN{RS="";ORS="\n\n"} int(5*(NR-1)/n)==k' "$train" > "$d/held.txt"
    awk -v k="$k" -v n="$total" 'BEGIN{RS="";ORS="\n\n"} int(5*(NR-1)/n)!=k' "$train" > "$d/train.txt"
    run "$d/map1.model" "$d/map1.log" fstcrf train "$d/train.txt" "${options[@]}" --order "$order" --sigma "$sigma" --max-iter "$(cap "$map_iter")" --threads 1 -o "$d/map1.model"
    run "$d/mce1.model" "$d/mce1.log" fstcrf train "$d/train.txt" "${options[@]}" --init "$d/map1.model" --algorithm mce-f --mce-c 1e7 --mce-iter "$(cap 20)" \
        --dev "$d/held.txt" --threads 1 -o "$d/mce1.model"
    line="fold $k: $(f1_of "$d/map1.model" "$d/held.txt") $(f1_at "$d/mce1.log" 4) $(f1_at "$d/mce1.log" 20)"
    if [ "$weak" = 1 ]; then
        run "$d/map03.model" "$d/map03.log" fstcrf train "$d/train.txt" "${options[@]}" --order "$order" --sigma 0.3 --max-iter "$(cap 49)" \
            --threads 1 -o "$d/map03.model"
        run "$d/mce03.model" "$d/mce03.log" fstcrf train "$d/train.txt" "${options[@]}" --init "$d/map03.model" --algorithm mce-f \
            --mce-c 1e7 --mce-iter "$(cap 73)" --dev "$d/held.txt" --threads 1 -o "$d/mce03.model"
        line="$line $(f1_of "$d/map03.model" "$d/held.txt") $(f1_at "$d/mce03.log" 73)"
    fi
    echo "$line"
done

for k in 0 1 2 3 4; do [ -s "$out/fold$k/mce1.model" ] || exit 0; done
for k in 0 1 2 3 4; do
    d=$out/fold$k
    run "$d/mce1_$pooled.model" "$d/mce1_$pooled.log" fstcrf train "$d/train.txt" "${options[@]}" --init "$d/map1.model" \
        --algorithm mce-f --mce-c 1e7 --mce-iter "$(cap "$pooled")" --threads 1 -o "$d/mce1_$pooled.model"
    fstcrf tag -q "$d/map1.model" "$d/held.txt" -o "$d/map1.tagged"
    fstcrf tag -q "$d/mce1_$pooled.model" "$d/held.txt" -o "$d/mce1_$pooled.tagged"
done
cat "$out"/fold{0,1,2,3,4}/map1.tagged > "$out/map1.tagged"
cat "$out"/fold{0,1,2,3,4}/mce1_"$pooled".tagged > "$out/mce1_$pooled.tagged"
echo "all folds: map1 $(fstcrf eval -q --pred "$out/map1.tagged" | awk '/FB1:/{print $NF; exit}')," \
     "mce1@$pooled $(fstcrf eval -q --pred "$out/mce1_$pooled.tagged" | awk '/FB1:/{print $NF; exit}')"
fstcrf compare "$out/map1.tagged" "$out/mce1_$pooled.tagged"
