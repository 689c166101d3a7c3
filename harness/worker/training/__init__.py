"""Building a cell inside the worker: Keras models, tf.data input, tf.distribute strategies and the
training loops (ctl and fit) around one replica update with gradient accumulation."""
