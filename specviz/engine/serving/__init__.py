"""Decoding as a server runs it: compared runs and races, threads and ZeroGPU's boundary.

  run.py     ComparedRun: speculative decoding beside the target-only baseline, warm runs and their memory budget
  race.py    both sides decoded to the end, one at a time, with the time each token was ready
  quiet.py   timed CPU forwards wait for a quiet machine
  threads.py torch's threads while serving a page
  zerogpu.py where model calls run: ZeroGPU's spaces.GPU boundary, or in-process
"""
