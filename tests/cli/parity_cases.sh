# The cases of attnlab's training against PyTorch's, defined once: sourced by
# pytorch_training_parity.sh (the test) and tools/training_parity_spread.sh (which measures how far
# the two curves may part on any CPU and BLAS kernel). A tiny model without dropout, 40 steps, the
# same batches and initial weights for both. Needs tiny_experiment (tiny_experiment.sh).
parity_cases=(post adamw pre-rms deepnorm)

# parity_experiment CASE NAME >exp.toml
parity_experiment() {
  local -a settings=()
  case $1 in
    post) ;;
    # AdamW (weight decay on the matrices and the embedding), the cosine schedule with a peak of
    # its own, and gradient clipping below this model's gradient norms (clipping on every step).
    adamw) settings=(training.optimizer='"adamw"' training.weight_decay=0.1 training.schedule='"cosine"'
                     training.lr=0.002 training.min_lr=0.0001 training.clip_norm=0.5) ;;
    # Pre-norm with RMSNorm (and the stacks' final norms).
    pre-rms) settings=(model.norm_position='"pre"' model.norm.name='"rms_norm"') ;;
    # DeepNorm: its scaled initial weights come with the batches' initial weights; the residual
    # scale is the reference's.
    deepnorm) settings=(model.norm_position='"deepnorm"') ;;
    *) echo "parity_experiment: unknown case '$1' (valid: ${parity_cases[*]})" >&2; return 1 ;;
  esac
  tiny_experiment "$2" experiment.threads=2 data.synthetic.train_pairs=2000 vocab.size=300 \
    model.encoder_layers=2 model.decoder_layers=2 model.dropout=0.0 training.batch_tokens=600 training.max_steps=40 \
    training.label_smoothing=0.1 training.log_every=1 training.eval_every=40 training.checkpoint_every=40 \
    "${settings[@]}"
}

# parity_tolerance CASE: the --tolerance arguments of tools/pytorch_reference_train.py for the case,
# REL or REL@FROM_STEP (relative difference of a step's losses). Every case agrees to float
# rounding (3e-7) for as long as its trajectory is stable. pre-rms's is not: from step 18 on, a
# change of one initial weight by one float rounding moves PyTorch's own curve by up to 4e-6 by
# step 25, 8e-5 by step 32 and 2e-3 by step 40, and attnlab's and PyTorch's curves part as far
# (7.5e-4 under OpenBLAS's Haswell kernels). Its bounds follow that growth with a margin of 3 or
# more (tools/training_parity_spread.sh; docs/results/training-spread.md, "Training against
# PyTorch").
parity_tolerance() {
  case $1 in
    pre-rms) echo "--tolerance 1e-4 --tolerance 1e-3@26 --tolerance 6e-3@33" ;;
    *) echo "--tolerance 1e-4" ;;
  esac
}
