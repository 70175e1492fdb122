# Megatron-LM launch command from strata plan: model llama3-70b on cluster dgx-a100, 32 GPUs = dp 2 x tp 4 x pp 4
# checked against Megatron-LM main d98e8a64 (2026-08-22); stack mcore-2024 (core_r0.8.0 (baf94af3, 2024-08-12); TE 1.7-1.9 era)
# data parallel size 2 = world size 32 / (tp 4 x pp 4); keep --nnodes x --nproc_per_node = 32
# 32 micro-batches per iteration = global batch 64 / (micro-batch 1 x dp 2)
# vocabulary 128256 (Megatron-LM pads it to a multiple of 128 x tp = 128512); replace NullTokenizer by the model's tokenizer and add the data arguments (--data-path, ...)
# strata's model spec does not record the RoPE base: add --rotary-base <theta> if the model's is not Megatron-LM's default 10000
torchrun --nnodes 4 --nproc_per_node 8 pretrain_gpt.py \
  --num-layers 80 \
  --hidden-size 8192 \
  --ffn-hidden-size 28672 \
  --num-attention-heads 64 \
  --group-query-attention \
  --num-query-groups 8 \
  --seq-length 8192 \
  --max-position-embeddings 8192 \
  --tokenizer-type NullTokenizer \
  --vocab-size 128256 \
  --position-embedding-type rope \
  --swiglu \
  --normalization RMSNorm \
  --untie-embeddings-and-output-weights \
  --disable-bias-linear \
  --attention-dropout 0.0 \
  --hidden-dropout 0.0 \
  --bf16 \
  --attention-backend fused \
  --tensor-model-parallel-size 4 \
  --pipeline-model-parallel-size 4 \
  --sequence-parallel \
  --pipeline-model-parallel-layout 'E,t*10|t*10|t*10|t*10|t*10|t*10|t*11|t*9,L' \
  --micro-batch-size 1 \
  --global-batch-size 64 \
  --recompute-granularity selective \
  --use-distributed-optimizer \
  --overlap-grad-reduce \
  --overlap-param-gather \
  --tp-comm-overlap
