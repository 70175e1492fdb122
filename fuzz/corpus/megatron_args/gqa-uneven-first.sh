torchrun --nnodes 1 --nproc_per_node 4 pretrain_gpt.py \
  --num-layers 8 --hidden-size 512 --num-attention-heads 8 --group-query-attention --num-query-groups 2 \
  --seq-length 256 --vocab-size 32000 --swiglu --disable-bias-linear --normalization RMSNorm \
  --position-embedding-type rope --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
  --decoder-first-pipeline-num-layers 3 --micro-batch-size 2 --global-batch-size 16 \
  --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 --fp16
