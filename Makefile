# Two commands from a fresh clone: `make wordcount` and `make test`.
PYTHON ?= python3.11
VENV := .venv
VPY := $(abspath $(VENV))/bin/python
STAMP := $(VENV)/.installed-stamp
export PYSPARK_PYTHON := $(VPY)
export PYSPARK_DRIVER_PYTHON := $(VPY)

.PHONY: test wordcount bench java clean

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "streamlib needs $(PYTHON) on PATH (set PYTHON=...)"; exit 1; }
	test -x $(VPY) || $(PYTHON) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e '.[test]'
	touch $(STAMP)

java:
	@$(VPY) -m streamlib.spark.java_check

test: $(STAMP) java
	$(VPY) -m pytest -q

wordcount: $(STAMP) java
	rm -rf examples/wordcount/run
	mkdir -p examples/wordcount/run
	cd examples/wordcount/run && $(abspath $(VENV))/bin/spark-submit --master 'local[2]' --conf spark.log.level=WARN \
	    ../wordcount.py --input ../data/input.txt

bench: $(STAMP) java
	$(VPY) benchmarks/topics_bench.py
	$(VPY) benchmarks/wordcount_bench.py
	$(VPY) benchmarks/wc_side_by_side.py
	$(VPY) benchmarks/task_overhead_bench.py
	$(VPY) benchmarks/batch_overhead_bench.py
	$(VPY) benchmarks/latency_bench.py

clean:
	rm -rf $(VENV) streamlib-data streamlib-state examples/wordcount/run
