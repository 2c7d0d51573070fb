<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name>DataPanel</name>
    <message>
        <source>Default: Reuters when found on this computer, else synthetic</source>
        <translation>默认：在本机找到 Reuters 时使用它，否则使用合成数据</translation>
    </message>
    <message>
        <source>Synthetic newswire (built in, Reuters-shaped)</source>
        <translation>合成新闻稿（内置，Reuters 形式）</translation>
    </message>
    <message>
        <source>Keras reuters.npz file</source>
        <translation>Keras reuters.npz 文件</translation>
    </message>
    <message>
        <source>Reuters-21578 folder (reut2-*.sgm)</source>
        <translation>Reuters-21578 文件夹（reut2-*.sgm）</translation>
    </message>
    <message>
        <source>Text folder (one subfolder per class)</source>
        <translation>文本文件夹（每个类别一个子文件夹）</translation>
    </message>
    <message>
        <source>CSV or TSV file (label and text columns)</source>
        <translation>CSV 或 TSV 文件（标签列和文本列）</translation>
    </message>
</context>
<context>
    <name>LayerType</name>
    <message>
        <source>Vocabulary (input_dim):</source>
        <translation>词表大小（input_dim）：</translation>
    </message>
    <message>
        <source>Vocabulary size: token ids must be smaller than this (30,982 for Reuters)</source>
        <translation>词表大小：词元 id 必须小于这个值（Reuters 为 30,982）</translation>
    </message>
    <message>
        <source>Vector size (output_dim):</source>
        <translation>向量维度（output_dim）：</translation>
    </message>
    <message>
        <source>Length of the vector each token becomes</source>
        <translation>每个词元变成的向量长度</translation>
    </message>
    <message>
        <source>Filters:</source>
        <translation>卷积核数：</translation>
    </message>
    <message>
        <source>Kernel size:</source>
        <translation>卷积核大小：</translation>
    </message>
    <message>
        <source>Window length in tokens; with padding &apos;valid&apos; the output is kernel_size - 1 steps shorter</source>
        <translation>窗口长度（词元数）；填充方式为 &apos;valid&apos; 时，输出比输入短 kernel_size - 1 步</translation>
    </message>
    <message>
        <source>Pool size:</source>
        <translation>池化大小：</translation>
    </message>
    <message>
        <source>Strides:</source>
        <translation>步长：</translation>
    </message>
    <message>
        <source>same as pool size</source>
        <translation>与池化大小相同</translation>
    </message>
    <message>
        <source>Padding:</source>
        <translation>填充：</translation>
    </message>
    <message>
        <source>Units:</source>
        <translation>单元数：</translation>
    </message>
    <message>
        <source>Output size; the last Dense layer needs one unit per class (46 for Reuters)</source>
        <translation>输出大小；最后一个 Dense 层每个类别需要一个单元（Reuters 为 46）</translation>
    </message>
    <message>
        <source>Activation:</source>
        <translation>激活函数：</translation>
    </message>
    <message>
        <source>Use bias</source>
        <translation>使用偏置</translation>
    </message>
    <message>
        <source>, no bias</source>
        <translation>，无偏置</translation>
    </message>
    <message>
        <source>Rate:</source>
        <translation>比例：</translation>
    </message>
    <message>
        <source>Fraction of inputs set to zero during training (none at evaluation)</source>
        <translation>训练时置零的输入比例（评估时不置零）</translation>
    </message>
    <message>
        <source>%1 filters, kernel %2, %3, %4</source>
        <translation>%1 个卷积核，核大小 %2，%3，%4</translation>
    </message>
    <message>
        <source>%1 units, %2</source>
        <translation>%1 个单元，%2</translation>
    </message>
    <message>
        <source>rate %1</source>
        <translation>比例 %1</translation>
    </message>
    <message>
        <source>%1 tokens → %2 dims</source>
        <translation>%1 个词元 → %2 维</translation>
    </message>
    <message>
        <source>pool %1, stride %2, %3</source>
        <translation>池化 %1，步长 %2，%3</translation>
    </message>
    <message>
        <source>Fraction of channels set to zero during training, each over the whole sequence (none at evaluation)</source>
        <translation>训练时置零的通道比例，每个通道在整个序列上一起置零（评估时不置零）</translation>
    </message>
</context>
<context>
    <name>QObject</name>
    <message>
        <source>%1 s</source>
        <translation>%1 秒</translation>
    </message>
</context>
<context>
    <name>TrainingController</name>
    <message>
        <source>Run %1 - %2 - %3 %4 - batch %5</source>
        <translation>运行 %1 - %2 - %3 %4 - 批次 %5</translation>
    </message>
</context>
<context>
    <name>main</name>
    <message>
        <source>Interactive data-parallel training</source>
        <translation>交互式数据并行训练</translation>
    </message>
    <message>
        <source>Train on the default data, save a screenshot of the window to FILE and exit.</source>
        <translation>在默认数据上训练，把窗口截图保存到 FILE，然后退出。</translation>
    </message>
    <message>
        <source>Epochs for --screenshot (default 3).</source>
        <translation>--screenshot 的训练轮数（默认 3）。</translation>
    </message>
    <message>
        <source>Interface language: zh_CN (Simplified Chinese) or en (English); default: the system&apos;s.</source>
        <translation>界面语言：zh_CN（简体中文）或 en（英语）；默认跟随系统。</translation>
    </message>
    <message>
        <source>Window size for --screenshot, e.g. 1366x768 (default: as on a first launch on this screen).</source>
        <translation>--screenshot 的窗口大小，例如 1366x768（默认：与在此屏幕上首次启动时相同）。</translation>
    </message>
    <message>
        <source>For --screenshot: bring these panels forward (dock names, comma-separated, e.g. tryItDock,classReportDock); a bottom one gets half the window&apos;s height.</source>
        <translation>用于 --screenshot：将这些面板置于前端（停靠窗口名称，以逗号分隔，例如 tryItDock,classReportDock）；底部面板将占窗口高度的一半。</translation>
    </message>
    <message>
        <source>For --screenshot: a newswire for the Try it panel to classify.</source>
        <translation>用于 --screenshot：交给“试一试”面板分类的一篇新闻稿。</translation>
    </message>
    <message>
        <source>Use the CPUs only: do not look for GPUs or load CUDA (as MIRRORLAB_NO_GPU=1).</source>
        <translation>只使用 CPU：不查找 GPU，也不加载 CUDA（同 MIRRORLAB_NO_GPU=1）。</translation>
    </message>
    <message>
        <source>Show the run whose `mirrorlab-cli train --json` output goes to FILE, live (e.g. rank 0 of an mpirun job); with --screenshot, once it ends.</source>
        <translation>实时显示 `mirrorlab-cli train --json` 输出到 FILE 的那次运行（例如 mpirun 作业的 0 号进程）；与 --screenshot 一起使用时，在其结束后截图。</translation>
    </message>
    <message>
        <source>For --screenshot: train on N workers started by mpirun (Training &gt; Train on several workers).</source>
        <translation>用于 --screenshot：在 mpirun 启动的 N 个工作进程上训练（训练 &gt; 在多个工作进程上训练）。</translation>
    </message>
    <message>
        <source>mirrorlab: error: there is no display to open the window on (neither DISPLAY nor WAYLAND_DISPLAY is set).
  Start MirrorLab from a desktop session or over `ssh -X`, or train without a window with
  `mirrorlab-cli train` (see `mirrorlab-cli train --help`).
</source>
        <translation>mirrorlab：错误：没有可以打开窗口的显示（DISPLAY 和 WAYLAND_DISPLAY 都未设置）。
  请在桌面会话中或通过 `ssh -X` 启动 MirrorLab，或用 `mirrorlab-cli train` 在没有窗口的情况下训练
  （见 `mirrorlab-cli train --help`）。
</translation>
    </message>
    <message>
        <source>neither DISPLAY nor WAYLAND_DISPLAY set</source>
        <translation>DISPLAY 和 WAYLAND_DISPLAY 都未设置</translation>
    </message>
    <message>
        <source>mirrorlab: error: the display could not be opened (%1): it is not running, or this session may not use it.
  Start MirrorLab from a desktop session or over `ssh -X`, or train without a window with
  `mirrorlab-cli train` (see `mirrorlab-cli train --help`). If the display works for other
  programs, Qt&apos;s platform plugin may not load: QT_DEBUG_PLUGINS=1 shows why.
</source>
        <translation>mirrorlab：错误：无法打开显示（%1）：它没有运行，或者本会话无权使用它。
  请在桌面会话中或通过 `ssh -X` 启动 MirrorLab，或用 `mirrorlab-cli train` 在没有窗口的情况下训练
  （见 `mirrorlab-cli train --help`）。如果该显示对其他程序可用，可能是 Qt 的平台插件无法加载：
  设置 QT_DEBUG_PLUGINS=1 可以看到原因。
</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::BackgroundJob</name>
    <message>
        <source>not enough memory for it</source>
        <translation>内存不足</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::ClassReportView</name>
    <message>
        <source>When a run ends, its final weights are evaluated here on the validation split, topic by topic.</source>
        <translation>运行结束后，将在此用验证集逐个主题评估其最终权重。</translation>
    </message>
    <message>
        <source>Per-class report</source>
        <translation>逐类报告</translation>
    </message>
    <message>
        <source>Precision, recall, F1 and support of every topic on the validation split; click a header to sort</source>
        <translation>验证集上每个主题的精确率、召回率、F1 和样本数；点击表头可排序</translation>
    </message>
    <message>
        <source>Topic</source>
        <translation>主题</translation>
    </message>
    <message>
        <source>Precision</source>
        <translation>精确率</translation>
    </message>
    <message>
        <source>Recall</source>
        <translation>召回率</translation>
    </message>
    <message>
        <source>F1</source>
        <translation>F1</translation>
    </message>
    <message>
        <source>Support</source>
        <translation>样本数</translation>
    </message>
    <message>
        <source>Of the wires predicted as this topic, the share that truly are</source>
        <translation>被预测为该主题的新闻稿中，真正属于该主题的比例</translation>
    </message>
    <message>
        <source>Of this topic&apos;s wires, the share the model finds</source>
        <translation>该主题的新闻稿中，被模型正确找出的比例</translation>
    </message>
    <message>
        <source>Wires of this topic in the validation split</source>
        <translation>验证集中该主题的新闻稿数量</translation>
    </message>
    <message>
        <source>Train a model first: when a run ends, its final weights are evaluated here.</source>
        <translation>请先训练一个模型：运行结束后，将在此评估其最终权重。</translation>
    </message>
    <message>
        <source>Evaluating the final weights on the validation split…</source>
        <translation>正在用验证集评估最终权重…</translation>
    </message>
    <message>
        <source>This data set has no validation split, so there is nothing to evaluate on.</source>
        <translation>此数据集没有验证集，因此无从评估。</translation>
    </message>
    <message>
        <source>Validation split: %1 wires, accuracy %2, macro F1 %3 (the run&apos;s final weights, evaluated in %4 ms).</source>
        <translation>验证集：%1 篇新闻稿，准确率 %2，宏平均 F1 %3（该运行的最终权重，评估用时 %4 毫秒）。</translation>
    </message>
    <message>
        <source>No wire was predicted as %1</source>
        <translation>没有新闻稿被预测为 %1</translation>
    </message>
    <message>
        <source>%1 has no wires in the validation split</source>
        <translation>验证集中没有 %1 的新闻稿</translation>
    </message>
    <message>
        <source>The last run trained in another process, which keeps its weights: train or resume a run here to evaluate it.</source>
        <translation>上一次运行在另一个进程中训练，权重保存在那里：请在此处训练或继续一次运行后再评估。</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::CompileOptions</name>
    <message>
        <source>1 replica</source>
        <translation>1 个副本</translation>
    </message>
    <message>
        <source>%1 replicas</source>
        <translation>%1 个副本</translation>
    </message>
    <message>
        <source>validation loss</source>
        <translation>验证损失</translation>
    </message>
    <message>
        <source>validation accuracy</source>
        <translation>验证准确率</translation>
    </message>
    <message>
        <source>validation top-5 accuracy</source>
        <translation>验证 top-5 准确率</translation>
    </message>
    <message>
        <source>training loss</source>
        <translation>训练损失</translation>
    </message>
    <message>
        <source>training accuracy</source>
        <translation>训练准确率</translation>
    </message>
    <message>
        <source>training top-5 accuracy</source>
        <translation>训练 top-5 准确率</translation>
    </message>
    <message>
        <source>Compile and fit</source>
        <translation>编译与训练</translation>
    </message>
    <message>
        <source>Optimizer:</source>
        <translation>优化器：</translation>
    </message>
    <message>
        <source>Resets to the optimizer&apos;s Keras default when the optimizer changes</source>
        <translation>更换优化器时恢复为该优化器的 Keras 默认值</translation>
    </message>
    <message>
        <source>Learning rate:</source>
        <translation>学习率：</translation>
    </message>
    <message>
        <source>Momentum:</source>
        <translation>动量：</translation>
    </message>
    <message>
        <source>Sparse categorical cross-entropy</source>
        <translation>稀疏分类交叉熵</translation>
    </message>
    <message>
        <source>Loss:</source>
        <translation>损失函数：</translation>
    </message>
    <message>
        <source>from_logits (the model outputs logits, not probabilities)</source>
        <translation>from_logits（模型输出的是 logits，而不是概率）</translation>
    </message>
    <message>
        <source>accuracy, top-k accuracy with k =</source>
        <translation>准确率、top-k 准确率，k =</translation>
    </message>
    <message>
        <source>The engine computes top-5 accuracy only (as the tutorial does), so k is fixed at 5.</source>
        <translation>引擎只计算 top-5 准确率（与教程相同），因此 k 固定为 5。</translation>
    </message>
    <message>
        <source>Metrics:</source>
        <translation>指标：</translation>
    </message>
    <message>
        <source>Samples per training step over all replicas; each replica gets a shard</source>
        <translation>所有副本合计的每个训练步样本数；每个副本分到其中一个分片</translation>
    </message>
    <message>
        <source>Global batch:</source>
        <translation>全局批次：</translation>
    </message>
    <message>
        <source>Epochs:</source>
        <translation>训练轮数：</translation>
    </message>
    <message>
        <source>Initial weights, shuffling and dropout follow this seed: the same seed repeats a run</source>
        <translation>初始权重、数据打乱和 dropout 都由这个种子决定：相同的种子会重复同一次运行</translation>
    </message>
    <message>
        <source>Seed:</source>
        <translation>随机种子：</translation>
    </message>
    <message>
        <source>Stop early when the monitored value stops improving</source>
        <translation>当监控的指标不再改善时提前停止</translation>
    </message>
    <message>
        <source>Early stopping:</source>
        <translation>早停：</translation>
    </message>
    <message>
        <source>%1 (%2)</source>
        <translation>%1（%2）</translation>
    </message>
    <message>
        <source>Monitor:</source>
        <translation>监控：</translation>
    </message>
    <message>
        <source> epochs</source>
        <translation> 轮</translation>
    </message>
    <message>
        <source>Epochs without improvement before training stops</source>
        <translation>停止训练前允许的无改善轮数</translation>
    </message>
    <message>
        <source>Patience:</source>
        <translation>耐心轮数：</translation>
    </message>
    <message>
        <source>Smaller changes than this do not count as an improvement</source>
        <translation>小于这个值的变化不算改善</translation>
    </message>
    <message>
        <source>Min delta:</source>
        <translation>最小变化量：</translation>
    </message>
    <message>
        <source>Restore the best epoch&apos;s weights at the end</source>
        <translation>结束时恢复最佳一轮的权重</translation>
    </message>
    <message>
        <source>%1 global = %2 per replica × %3</source>
        <translation>全局 %1 = 每个副本 %2 × %3</translation>
    </message>
    <message>
        <source>%1 global = %2 over %3</source>
        <translation>全局 %1 = %2，分给 %3</translation>
    </message>
    <message>
        <source> · %1 steps per epoch</source>
        <translation> · 每轮 %1 步</translation>
    </message>
    <message>
        <source>%1 or %2</source>
        <translation>%1 或 %2</translation>
    </message>
    <message>
        <source>⚠ %1 over %2 replicas: %3 — the replicas with the larger shard set the pace of every step. Use a multiple of %2 (%4) for balanced replicas.</source>
        <translation>⚠ %1 分给 %2 个副本：%3 —— 分片较大的副本决定每一步的速度。请使用 %2 的倍数（%4），让各副本负载均衡。</translation>
    </message>
    <message>
        <source>⚠ A learning rate of %1 is unusually high for %2 (Keras default %3); the loss will likely diverge to NaN.</source>
        <translation>⚠ 对 %2 来说，学习率 %1 异常偏高（Keras 默认值为 %3）；损失很可能发散为 NaN。</translation>
    </message>
    <message>
        <source>⚠ The last layer already applies softmax; from_logits=True would apply it twice (Keras trains worse that way; MirrorLab uses the logits once). Clear from_logits.</source>
        <translation>⚠ 最后一层已经应用了 softmax；from_logits=True 会让它被应用两次（Keras 这样训练效果更差；MirrorLab 只使用一次 logits）。请取消 from_logits。</translation>
    </message>
    <message>
        <source>⚠ The last layer has no softmax, so its outputs are logits; tick from_logits so the loss treats them as such.</source>
        <translation>⚠ 最后一层没有 softmax，所以它的输出是 logits；请勾选 from_logits，让损失函数按 logits 处理。</translation>
    </message>
    <message>
        <source>⚠ The last layer&apos;s activation is %1; sparse categorical cross-entropy needs softmax (or linear with from_logits), so training will refuse to start.</source>
        <translation>⚠ 最后一层的激活函数是 %1；稀疏分类交叉熵需要 softmax（或线性激活加 from_logits），因此训练将拒绝开始。</translation>
    </message>
    <message>
        <source>tf.keras 2 (the tutorial&apos;s)</source>
        <translation>tf.keras 2（教程所用）</translation>
    </message>
    <message>
        <source>Keras 3 on TensorFlow</source>
        <translation>Keras 3（TensorFlow 后端）</translation>
    </message>
    <message>
        <source>Keras 3 on JAX or PyTorch</source>
        <translation>Keras 3（JAX 或 PyTorch 后端）</translation>
    </message>
    <message>
        <source>Where Keras generations differ, which one the optimizer reproduces: how the Embedding&apos;s sparse gradient updates its rows, and Nadam&apos;s momentum schedule</source>
        <translation>在各代 Keras 行为不同之处，优化器复现哪一代：Embedding 的稀疏梯度如何更新其各行，以及 Nadam 的动量调度</translation>
    </message>
    <message>
        <source>Keras semantics:</source>
        <translation>Keras 语义：</translation>
    </message>
    <message>
        <source>How the gradients change the weights (compile(optimizer=...))</source>
        <translation>梯度如何改变权重（compile(optimizer=...)）</translation>
    </message>
    <message>
        <source>SGD&apos;s momentum; 0 is plain gradient descent</source>
        <translation>SGD 的动量；0 表示普通梯度下降</translation>
    </message>
    <message>
        <source>Tick only when the last layer has no softmax: the tutorial&apos;s softmax output wants it unticked</source>
        <translation>只有最后一层没有 softmax 时才勾选：教程的 softmax 输出应保持不勾选</translation>
    </message>
    <message>
        <source>Top-k accuracy: k</source>
        <translation>Top-k 准确率：k</translation>
    </message>
    <message>
        <source>Global batch size</source>
        <translation>全局批次大小</translation>
    </message>
    <message>
        <source>Passes over the training data (fit(epochs=...))</source>
        <translation>遍历训练数据的次数（fit(epochs=...)）</translation>
    </message>
    <message>
        <source>Keras&apos; EarlyStopping callback: ends training when the monitored value has not improved for &apos;patience&apos; epochs</source>
        <translation>Keras 的 EarlyStopping 回调：监控的指标在“耐心轮数”内没有改善时结束训练</translation>
    </message>
    <message>
        <source>The value early stopping watches</source>
        <translation>早停所监控的指标</translation>
    </message>
    <message>
        <source>restore_best_weights: end with the weights of the best epoch instead of the last</source>
        <translation>restore_best_weights：结束时使用最佳一轮的权重，而不是最后一轮的</translation>
    </message>
    <message>
        <source>%1 steps per epoch at most</source>
        <translation>每轮最多 %1 步</translation>
    </message>
    <message>
        <source>no shuffling</source>
        <translation>不打乱顺序</translation>
    </message>
    <message>
        <source>no overfitting warnings</source>
        <translation>不提示过拟合</translation>
    </message>
    <message>
        <source>Use the defaults</source>
        <translation>使用默认值</translation>
    </message>
    <message>
        <source>Train with Keras&apos; defaults for the settings this form does not show</source>
        <translation>对本表单未显示的设置使用 Keras 的默认值进行训练</translation>
    </message>
    <message>
        <source>Also trained with settings this form does not show: %1.</source>
        <translation>训练时还使用了本表单未显示的设置：%1。</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::ConfusionMatrixView</name>
    <message>
        <source>Confusion matrix</source>
        <translation>混淆矩阵</translation>
    </message>
    <message>
        <source>Rows: the true topic; columns: the topic the model predicted. Point at a cell for its count.</source>
        <translation>行：真实主题；列：模型预测的主题。将鼠标指向单元格可查看数量。</translation>
    </message>
    <message>
        <source>other (%1 topics)</source>
        <translation>其他（%1 个主题）</translation>
    </message>
    <message>
        <source>1 wire of %1 predicted as %2</source>
        <translation>%1 中有 1 篇新闻稿被预测为 %2</translation>
    </message>
    <message>
        <source>%1 wires of %2 predicted as %3</source>
        <translation>%2 中有 %1 篇新闻稿被预测为 %3</translation>
    </message>
    <message>
        <source>The confusion matrix appears when a run has been evaluated.</source>
        <translation>运行评估完成后，这里将显示混淆矩阵。</translation>
    </message>
    <message>
        <source>true ↓ predicted →</source>
        <translation>真实 ↓ 预测 →</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::DataPanel</name>
    <message>
        <source>Source:</source>
        <translation>来源：</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <source>Path:</source>
        <translation>路径：</translation>
    </message>
    <message>
        <source>Load</source>
        <translation>加载</translation>
    </message>
    <message>
        <source>Download Keras Reuters…</source>
        <translation>下载 Keras Reuters…</translation>
    </message>
    <message>
        <source>Download reuters.npz from Keras&apos; server into %1</source>
        <translation>从 Keras 服务器下载 reuters.npz 到 %1</translation>
    </message>
    <message>
        <source>Label</source>
        <translation>标签</translation>
    </message>
    <message>
        <source>Tokens</source>
        <translation>词元</translation>
    </message>
    <message>
        <source>Start of the sample</source>
        <translation>样本开头</translation>
    </message>
    <message>
        <source>Choose a folder</source>
        <translation>选择文件夹</translation>
    </message>
    <message>
        <source>Choose a file</source>
        <translation>选择文件</translation>
    </message>
    <message>
        <source>Downloading reuters.npz: %1 of %2 MB…</source>
        <translation>正在下载 reuters.npz：%1 / %2 MB…</translation>
    </message>
    <message>
        <source>Downloading reuters.npz: %1 MB…</source>
        <translation>正在下载 reuters.npz：%1 MB…</translation>
    </message>
    <message>
        <source>Download cancelled.</source>
        <translation>下载已取消。</translation>
    </message>
    <message>
        <source>Cancel download</source>
        <translation>取消下载</translation>
    </message>
    <message>
        <source>Downloading reuters.npz…</source>
        <translation>正在下载 reuters.npz…</translation>
    </message>
    <message>
        <source>synthetic</source>
        <translation>合成数据</translation>
    </message>
    <message>
        <source> (synthetic)</source>
        <translation>（合成）</translation>
    </message>
    <message>
        <source>Loading %1…</source>
        <translation>正在加载 %1…</translation>
    </message>
    <message>
        <source>Could not load the data: %1</source>
        <translation>无法加载数据：%1</translation>
    </message>
    <message>
        <source>Loaded: %1</source>
        <translation>已加载：%1</translation>
    </message>
    <message>
        <source>%1
</source>
        <translation>%1
</translation>
    </message>
    <message>
        <source>Training samples:   %1
</source>
        <translation>训练样本：  %1
</translation>
    </message>
    <message>
        <source>Validation samples: %1
</source>
        <translation>验证样本：  %1
</translation>
    </message>
    <message>
        <source>Classes:            %1
</source>
        <translation>类别数：    %1
</translation>
    </message>
    <message>
        <source>Vocabulary:         %1 ids
</source>
        <translation>词表：      %1 个 id
</translation>
    </message>
    <message>
        <source>Length (tokens):    median %1, max %2; %3 % longer than 300
</source>
        <translation>长度（词元）：中位数 %1，最大 %2；%3 % 长于 300
</translation>
    </message>
    <message>
        <source>Largest classes:
</source>
        <translation>最大的类别：
</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Stopped loading %1; still using %2</source>
        <translation>已停止加载 %1；仍在使用 %2</translation>
    </message>
    <message>
        <source>Stopped loading %1</source>
        <translation>已停止加载 %1</translation>
    </message>
    <message>
        <source>Where the training and validation samples come from</source>
        <translation>训练样本和验证样本的来源</translation>
    </message>
    <message>
        <source>Path</source>
        <translation>路径</translation>
    </message>
    <message>
        <source>The file or folder of the chosen source</source>
        <translation>所选来源的文件或文件夹</translation>
    </message>
    <message>
        <source>Choose the file or folder</source>
        <translation>选择文件或文件夹</translation>
    </message>
    <message>
        <source>Read the data from the chosen source (in the background; pressed again, it cancels)</source>
        <translation>从所选来源读取数据（在后台进行；再按一次则取消）</translation>
    </message>
    <message>
        <source>Statistics</source>
        <translation>统计</translation>
    </message>
    <message>
        <source>Sizes, classes, vocabulary and sequence lengths of the loaded data</source>
        <translation>已加载数据的大小、类别、词表和序列长度</translation>
    </message>
    <message>
        <source>Samples</source>
        <translation>样本</translation>
    </message>
    <message>
        <source>The first training samples with their labels</source>
        <translation>前几个训练样本及其标签</translation>
    </message>
    <message>
        <source>Download the word index</source>
        <translation>下载词索引</translation>
    </message>
    <message>
        <source>Download Keras&apos; reuters_word_index.json into %1 (resumable, checked against Keras&apos; MD5)</source>
        <translation>把 Keras 的 reuters_word_index.json 下载到 %1（可断点续传，并按 Keras 的 MD5 校验）</translation>
    </message>
    <message>
        <source>Derive from Reuters-21578</source>
        <translation>从 Reuters-21578 推导</translation>
    </message>
    <message>
        <source>Rebuild Keras&apos; word index from the Reuters-21578 files</source>
        <translation>根据 Reuters-21578 文件重建 Keras 的词索引</translation>
    </message>
    <message>
        <source>Downloading reuters_word_index.json: %1 of %2 kB…</source>
        <translation>正在下载 reuters_word_index.json：%1 / %2 kB…</translation>
    </message>
    <message>
        <source>Downloading reuters_word_index.json: %1 kB…</source>
        <translation>正在下载 reuters_word_index.json：%1 kB…</translation>
    </message>
    <message>
        <source>Words: from Keras&apos; word index %1</source>
        <translation>词语：来自 Keras 的词索引 %1</translation>
    </message>
    <message>
        <source>Words: from the word index derived from the Reuters-21578 files (Keras&apos; recipe), %1</source>
        <translation>词语：来自根据 Reuters-21578 文件（按 Keras 的方法）推导出的词索引，%1</translation>
    </message>
    <message>
        <source>Words: the source&apos;s own vocabulary</source>
        <translation>词语：数据来源自带的词表</translation>
    </message>
    <message>
        <source>Words: none yet. reuters.npz holds word ids only, and no reuters_word_index.json was found beside it; download Keras&apos; word index or derive it from the Reuters-21578 files to read the samples as words.</source>
        <translation>词语：暂无。reuters.npz 只包含词 id，而且旁边没有找到 reuters_word_index.json；下载 Keras 的词索引，或从 Reuters-21578 文件推导出它，即可以词语形式阅读样本。</translation>
    </message>
    <message>
        <source>Words: none (this source has word ids only)</source>
        <translation>词语：无（该数据来源只有词 id）</translation>
    </message>
    <message>
        <source>Rebuild Keras&apos; word index from the Reuters-21578 files in %1 (the same 30,979 ranks)</source>
        <translation>根据 %1 中的 Reuters-21578 文件重建 Keras 的词索引（同样的 30,979 个排名）</translation>
    </message>
    <message>
        <source>No Reuters-21578 files found: put reut2-000.sgm ... reut2-021.sgm in %1 or set MIRRORLAB_REUTERS21578_DIR</source>
        <translation>未找到 Reuters-21578 文件：请把 reut2-000.sgm … reut2-021.sgm 放到 %1，或设置 MIRRORLAB_REUTERS21578_DIR</translation>
    </message>
    <message>
        <source>Downloading reuters_word_index.json…</source>
        <translation>正在下载 reuters_word_index.json…</translation>
    </message>
    <message>
        <source>Deriving the word index from the Reuters-21578 files in %1…</source>
        <translation>正在根据 %1 中的 Reuters-21578 文件推导词索引…</translation>
    </message>
    <message>
        <source>Could not derive the word index: %1</source>
        <translation>无法推导词索引：%1</translation>
    </message>
    <message>
        <source>Not loaded yet: training uses %1 (%2) until you press Load.</source>
        <translation>尚未加载：在按下“加载”之前，训练使用 %1（%2）。</translation>
    </message>
    <message>
        <source>The data used last time (%1) could not be loaded: %2. The default data is loaded instead; choose other data in the Data panel.</source>
        <translation>无法加载上次使用的数据（%1）：%2。已改为加载默认数据；请在“数据”面板中选择其他数据。</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::DatasetDownloader</name>
    <message>
        <source>Could not create the folder %1.</source>
        <translation>无法创建文件夹 %1。</translation>
    </message>
    <message>
        <source>Could not write %1: %2</source>
        <translation>无法写入 %1：%2</translation>
    </message>
    <message>
        <source>Could not download %1 (the server keeps sending another part of the file than the one asked for).</source>
        <translation>无法下载 %1（服务器一直发送文件的其他部分，而不是请求的那一部分）。</translation>
    </message>
    <message>
        <source>the server answered HTTP %1</source>
        <translation>服务器返回 HTTP %1</translation>
    </message>
    <message>
        <source>import the Reuters-21578 files (Data → Reuters-21578 folder), train on your own texts (text folder or CSV), or use the built-in synthetic corpus.</source>
        <translation>导入 Reuters-21578 文件（数据 → Reuters-21578 文件夹），用你自己的文本训练（文本文件夹或 CSV），或者使用内置的合成语料。</translation>
    </message>
    <message>
        <source>Could not download %1 (%2). Without a connection you can: %3</source>
        <translation>无法下载 %1（%2）。没有网络连接时你可以：%3</translation>
    </message>
    <message>
        <source>Could not download %1 (%2). Instead you can: %3</source>
        <translation>无法下载 %1（%2）。你也可以：%3</translation>
    </message>
    <message>
        <source>Could not read %1 back to check it.</source>
        <translation>无法读回 %1 进行校验。</translation>
    </message>
    <message>
        <source>The downloaded %1 is damaged: its SHA-256 is %2, expected %3. The partial file was deleted; try again.</source>
        <translation>下载的 %1 已损坏：它的 SHA-256 是 %2，应为 %3。不完整的文件已删除，请重试。</translation>
    </message>
    <message>
        <source>the connection closed after %1 of %2 bytes</source>
        <translation>连接在收到 %2 字节中的 %1 字节后关闭</translation>
    </message>
    <message>
        <source>Stopped downloading %1: the server sent more than %2 MB, far more than the file is. Check the address (MIRRORLAB_REUTERS_URL) or try again later.</source>
        <translation>已停止下载 %1：服务器发送了超过 %2 MB 的数据，远大于该文件的大小。请检查地址（MIRRORLAB_REUTERS_URL）或稍后再试。</translation>
    </message>
    <message>
        <source>Could not move %1 to %2: %3</source>
        <translation>无法将 %1 移动到 %2：%3</translation>
    </message>
    <message>
        <source>The downloaded %1 is damaged: its MD5 is %2, expected %3. The partial file was deleted; try again.</source>
        <translation>下载的 %1 已损坏：它的 MD5 是 %2，应为 %3。不完整的文件已删除；请重试。</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::DeviceCarvingView</name>
    <message>
        <source>%1 MB</source>
        <translation>%1 MB</translation>
    </message>
    <message>
        <source>%1 · %2 · %3</source>
        <translation>%1 · %2 · %3</translation>
    </message>
    <message>
        <source>%1 · %2 · memory size unknown</source>
        <translation>%1 · %2 · 内存大小未知</translation>
    </message>
    <message>
        <source>%1 (not used)</source>
        <translation>%1（未使用）</translation>
    </message>
    <message>
        <source>not used</source>
        <translation>未使用</translation>
    </message>
    <message>
        <source>%1 is not used by this configuration</source>
        <translation>当前配置没有使用 %1</translation>
    </message>
    <message>
        <source>%1: memory limit %2</source>
        <translation>%1：内存上限 %2</translation>
    </message>
    <message>
        <source> (%1 % of %2)</source>
        <translation>（%2 的 %1 %）</translation>
    </message>
    <message>
        <source>%1 · %2</source>
        <translation>%1 · %2</translation>
    </message>
    <message>
        <source>unallocated %1</source>
        <translation>未分配 %1</translation>
    </message>
    <message>
        <source>%1 of %2 is not given to any virtual device</source>
        <translation>%2 中有 %1 没有分给任何虚拟设备</translation>
    </message>
    <message>
        <source>over by %1: the limits add up to more than %2 has</source>
        <translation>超出 %1：各上限之和超过了 %2 的内存</translation>
    </message>
    <message>
        <source>%1 grows on demand (no limit)</source>
        <translation>%1 按需增长（无上限）</translation>
    </message>
    <message>
        <source>%1 allocates memory as it needs it, up to all of %2</source>
        <translation>%1 按需分配内存，最多可用完 %2 的全部内存</translation>
    </message>
    <message>
        <source>%1 · all memory, no limit</source>
        <translation>%1 · 全部内存，无上限</translation>
    </message>
    <message>
        <source>%1 share all memory (no limit)</source>
        <translation>%1 共享全部内存（无上限）</translation>
    </message>
    <message>
        <source>No physical devices</source>
        <translation>没有物理设备</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::DevicesPanel</name>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Logical devices (to scale)</source>
        <translation>逻辑设备（按比例）</translation>
    </message>
    <message>
        <source>Strategy</source>
        <translation>策略</translation>
    </message>
    <message>
        <source>All-reduce:</source>
        <translation>全归约：</translation>
    </message>
    <message>
        <source>Auto</source>
        <translation>自动</translation>
    </message>
    <message>
        <source>Reduce to one device</source>
        <translation>归约到一个设备</translation>
    </message>
    <message>
        <source>Ring</source>
        <translation>环形</translation>
    </message>
    <message>
        <source>Auto picks what the engine would: reduce to one device and broadcast when replicas share a physical device (as TensorFlow does for virtual GPUs), NCCL between separate GPUs where the CUDA backend has it, otherwise a ring.</source>
        <translation>“自动”按引擎的规则选择：副本共享一个物理设备时归约到一个设备再广播（TensorFlow 对虚拟 GPU 也是这样做的）；在 CUDA 后端提供 NCCL 时，在不同 GPU 之间使用 NCCL；否则使用环形全归约。</translation>
    </message>
    <message>
        <source>No GPU found (%1). Virtual devices, memory limits and mirrored training all work on the CPU too.</source>
        <translation>没有找到 GPU（%1）。虚拟设备、内存上限和镜像训练在 CPU 上同样可用。</translation>
    </message>
    <message>
        <source>GPU backend: %1</source>
        <translation>GPU 后端：%1</translation>
    </message>
    <message>
        <source>%1 · %2</source>
        <translation>%1 · %2</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <source>%1 cores · %2 memory (%3 free)</source>
        <translation>%1 个核心 · %2 内存（%3 可用）</translation>
    </message>
    <message>
        <source>%1 memory · compute capability %2 · bus %3</source>
        <translation>%1 内存 · 计算能力 %2 · 总线 %3</translation>
    </message>
    <message>
        <source> · %1 multiprocessors</source>
        <translation> · %1 个多处理器</translation>
    </message>
    <message>
        <source>Use</source>
        <translation>使用</translation>
    </message>
    <message>
        <source>One logical device</source>
        <translation>一个逻辑设备</translation>
    </message>
    <message>
        <source>Split into N virtual devices</source>
        <translation>拆分为 N 个虚拟设备</translation>
    </message>
    <message>
        <source>Memory growth</source>
        <translation>内存按需增长</translation>
    </message>
    <message>
        <source>Replicas:</source>
        <translation>副本数：</translation>
    </message>
    <message>
        <source>Several replicas on one device each get their own thread and share its cores</source>
        <translation>同一设备上的多个副本各有自己的线程，并共享该设备的核心</translation>
    </message>
    <message>
        <source>Virtual devices:</source>
        <translation>虚拟设备数：</translation>
    </message>
    <message>
        <source>Memory limit each:</source>
        <translation>每个的内存上限：</translation>
    </message>
    <message>
        <source> MB</source>
        <translation> MB</translation>
    </message>
    <message>
        <source>Memory limit of every virtual device in MB (MiB, as TensorFlow&apos;s memory_limit)</source>
        <translation>每个虚拟设备的内存上限，单位 MB（即 MiB，与 TensorFlow 的 memory_limit 相同）</translation>
    </message>
    <message>
        <source>Set each limit separately</source>
        <translation>分别设置每个上限</translation>
    </message>
    <message>
        <source>Logical device</source>
        <translation>逻辑设备</translation>
    </message>
    <message>
        <source>Memory limit</source>
        <translation>内存上限</translation>
    </message>
    <message>
        <source>uses all %1 cores</source>
        <translation>使用全部 %1 个核心</translation>
    </message>
    <message>
        <source>%1 replicas share the %2 cores</source>
        <translation>%1 个副本共享 %2 个核心</translation>
    </message>
    <message>
        <source>One logical device, no memory limit.</source>
        <translation>一个逻辑设备，无内存上限。</translation>
    </message>
    <message>
        <source>%1 logical devices, each with its own thread; they share the memory with no limit.</source>
        <translation>%1 个逻辑设备，各有自己的线程；它们共享内存，没有上限。</translation>
    </message>
    <message>
        <source>Each virtual device is a logical device with its own memory limit (as tf.config.set_logical_device_configuration); a replica that needs more fails with out of memory.</source>
        <translation>每个虚拟设备都是一个有自己内存上限的逻辑设备（同 tf.config.set_logical_device_configuration）；需要更多内存的副本会因内存不足而失败。</translation>
    </message>
    <message>
        <source>One logical device that takes memory as it needs it (as tf.config.experimental.set_memory_growth); no limit, cannot be combined with virtual devices.</source>
        <translation>一个按需占用内存的逻辑设备（同 tf.config.experimental.set_memory_growth）；没有上限，不能与虚拟设备同时使用。</translation>
    </message>
    <message>
        <source>virtual device %1</source>
        <translation>虚拟设备 %1</translation>
    </message>
    <message>
        <source>The configuration also names %1, which this machine does not have (or which is listed twice).</source>
        <translation>配置中还列出了 %1，但这台机器没有它（或者它被列出了两次）。</translation>
    </message>
    <message>
        <source>Ready: 1 replica</source>
        <translation>就绪：1 个副本</translation>
    </message>
    <message>
        <source>Ready: %1 replicas</source>
        <translation>就绪：%1 个副本</translation>
    </message>
    <message>
        <source>%1 has %2 free, but its virtual devices ask for %3 in all: other programs hold the rest, so a run may run out of memory before reaching the limits.</source>
        <translation>%1 当前空闲 %2，但其虚拟设备共需 %3：其余内存被其他程序占用，训练可能在达到限额之前就内存不足。</translation>
    </message>
    <message>
        <source>Cannot start: %1</source>
        <translation>无法开始：%1</translation>
    </message>
    <message>
        <source>No strategy yet: the device configuration is not valid.</source>
        <translation>还没有策略：设备配置无效。</translation>
    </message>
    <message>
        <source>One device: %1 (no all-reduce)</source>
        <translation>单个设备：%1（没有全归约）</translation>
    </message>
    <message>
        <source>Mirrored over %1 devices (%2)</source>
        <translation>在 %1 个设备上镜像（%2）</translation>
    </message>
    <message>
        <source>Mirrored over %1 devices</source>
        <translation>在 %1 个设备上镜像</translation>
    </message>
    <message>
        <source>Under the first line: what the engine logs about the all-reduce when the run starts, word for word.</source>
        <translation>第一行之下：运行开始时引擎关于全归约写入日志的内容，逐字照录。</translation>
    </message>
    <message>
        <source>Forget the saved devices this computer does not have</source>
        <translation>忘掉本机没有的已保存设备</translation>
    </message>
    <message>
        <source>Train on %1</source>
        <translation>在 %1 上训练</translation>
    </message>
    <message>
        <source>How to use %1</source>
        <translation>%1 的使用方式</translation>
    </message>
    <message>
        <source>One logical device, several virtual devices with a memory limit each, or memory growth</source>
        <translation>一个逻辑设备、若干各有内存上限的虚拟设备，或内存按需增长</translation>
    </message>
    <message>
        <source>Logical devices carved out of %1, one replica each</source>
        <translation>从 %1 划分出的逻辑设备，每个运行一个副本</translation>
    </message>
    <message>
        <source>Give every virtual device its own memory limit in the table below</source>
        <translation>在下表中为每个虚拟设备单独设置内存上限</translation>
    </message>
    <message>
        <source>Memory limit of each virtual device</source>
        <translation>每个虚拟设备的内存上限</translation>
    </message>
    <message>
        <source>Memory limit of virtual device %1</source>
        <translation>虚拟设备 %1 的内存上限</translation>
    </message>
    <message>
        <source>; press Remove beside the missing devices and tick the CPU to train on it</source>
        <translation>；请点击缺失设备旁的“移除”，并勾选 CPU 以在 CPU 上训练</translation>
    </message>
    <message>
        <source>train on the CPU (tick it above)</source>
        <translation>在 CPU 上训练（在上方勾选它）</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::ImageFile</name>
    <message>
        <source>Cannot write %1: %2</source>
        <translation>无法写入 %1：%2</translation>
    </message>
    <message>
        <source>the picture could not be encoded as PNG</source>
        <translation>图片无法编码为 PNG</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::LayerEditor</name>
    <message>
        <source>Keras layer name; leave empty for an automatic one</source>
        <translation>Keras 层名；留空则自动命名</translation>
    </message>
    <message>
        <source>Name:</source>
        <translation>名称：</translation>
    </message>
    <message>
        <source>valid (no padding)</source>
        <translation>valid（不填充）</translation>
    </message>
    <message>
        <source>same (keeps the length)</source>
        <translation>same（保持长度）</translation>
    </message>
    <message>
        <source>Select a layer to edit its arguments.</source>
        <translation>选择一个层来编辑它的参数。</translation>
    </message>
    <message>
        <source>&lt;b&gt;%1&lt;/b&gt; layer “%2”</source>
        <translation>&lt;b&gt;%1&lt;/b&gt; 层“%2”</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::LogPanel</name>
    <message>
        <source>Show:</source>
        <translation>显示：</translation>
    </message>
    <message>
        <source>Everything</source>
        <translation>全部</translation>
    </message>
    <message>
        <source>Warnings and errors</source>
        <translation>警告和错误</translation>
    </message>
    <message>
        <source>Errors</source>
        <translation>错误</translation>
    </message>
    <message>
        <source>Clear</source>
        <translation>清空</translation>
    </message>
    <message>
        <source>Run %1 started</source>
        <translation>运行 %1 已开始</translation>
    </message>
    <message>
        <source>Which lines the log shows</source>
        <translation>日志显示哪些行</translation>
    </message>
    <message>
        <source>Empty the log</source>
        <translation>清空日志</translation>
    </message>
    <message>
        <source>Log</source>
        <translation>日志</translation>
    </message>
    <message>
        <source>The engine&apos;s log lines, as TensorFlow would print them</source>
        <translation>引擎的日志行，与 TensorFlow 打印的相同</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::MainWindow</name>
    <message>
        <source>MirrorLab — mirrored training</source>
        <translation>MirrorLab —— 镜像训练</translation>
    </message>
    <message>
        <source>Devices</source>
        <translation>设备</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Data</source>
        <translation>数据</translation>
    </message>
    <message>
        <source>Device monitor</source>
        <translation>设备监视器</translation>
    </message>
    <message>
        <source>Runs</source>
        <translation>运行记录</translation>
    </message>
    <message>
        <source>Log</source>
        <translation>日志</translation>
    </message>
    <message>
        <source>Step view</source>
        <translation>单步视图</translation>
    </message>
    <message>
        <source>Timeline</source>
        <translation>时间线</translation>
    </message>
    <message>
        <source>Scaling</source>
        <translation>扩展性</translation>
    </message>
    <message>
        <source>A training run is in progress: stop it first, so that the two do not share the machine.</source>
        <translation>正在进行一次训练：请先停止它，以免两者争用同一台机器。</translation>
    </message>
    <message>
        <source>Training failed: %1</source>
        <translation>训练失败：%1</translation>
    </message>
    <message>
        <source>Ready</source>
        <translation>就绪</translation>
    </message>
    <message>
        <source>Training</source>
        <translation>训练</translation>
    </message>
    <message>
        <source>Start</source>
        <translation>开始</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>Export history as CSV…</source>
        <translation>把历史导出为 CSV…</translation>
    </message>
    <message>
        <source>Export history</source>
        <translation>导出历史</translation>
    </message>
    <message>
        <source>CSV files (*.csv)</source>
        <translation>CSV 文件 (*.csv)</translation>
    </message>
    <message>
        <source>Export charts as PNG…</source>
        <translation>把图表导出为 PNG…</translation>
    </message>
    <message>
        <source>Export charts</source>
        <translation>导出图表</translation>
    </message>
    <message>
        <source>PNG images (*.png)</source>
        <translation>PNG 图像 (*.png)</translation>
    </message>
    <message>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>Devices: %1</source>
        <translation>设备：%1</translation>
    </message>
    <message>
        <source>Model: %1</source>
        <translation>模型：%1</translation>
    </message>
    <message>
        <source>The data is still loading.</source>
        <translation>数据仍在加载。</translation>
    </message>
    <message>
        <source>No data loaded; choose a source in the Data panel and press Load.</source>
        <translation>尚未加载数据；请在“数据”面板中选择来源并点击“加载”。</translation>
    </message>
    <message>
        <source>Data: %1</source>
        <translation>数据：%1</translation>
    </message>
    <message>
        <source>Start training</source>
        <translation>开始训练</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>Stop training?</source>
        <translation>停止训练？</translation>
    </message>
    <message>
        <source>A training run is in progress. Stop it and close MirrorLab?

The epochs finished so far are in the Runs panel; export them there first if you want to keep them.</source>
        <translation>训练正在进行。停止训练并关闭 MirrorLab？

到目前为止完成的轮次显示在“运行”面板中；如需保留，请先在那里导出。</translation>
    </message>
    <message>
        <source>Stopping the run; MirrorLab closes when the step in flight has finished…</source>
        <translation>正在停止训练；当前步骤完成后 MirrorLab 将关闭…</translation>
    </message>
    <message>
        <source>Next step</source>
        <translation>下一步</translation>
    </message>
    <message>
        <source>Run exactly one more training step, then wait (slow motion)</source>
        <translation>再运行恰好一个训练步，然后等待（慢动作）</translation>
    </message>
    <message>
        <source>&amp;Training</source>
        <translation>训练(&amp;T)</translation>
    </message>
    <message>
        <source>Open %1</source>
        <translation>打开%1</translation>
    </message>
    <message>
        <source>Show the %1 panel and move the keyboard focus into it</source>
        <translation>显示“%1”面板并把键盘焦点移入其中</translation>
    </message>
    <message>
        <source>Show or hide panels</source>
        <translation>显示或隐藏面板</translation>
    </message>
    <message>
        <source>Resume training</source>
        <translation>继续训练</translation>
    </message>
    <message>
        <source>Pause training after the step in flight</source>
        <translation>当前训练步完成后暂停训练</translation>
    </message>
    <message>
        <source>Stop training; the epochs finished so far are kept</source>
        <translation>停止训练；已完成的轮次会保留</translation>
    </message>
    <message>
        <source>Run %1 cannot be trained again: %2</source>
        <translation>运行 %1 无法再次训练：%2</translation>
    </message>
    <message>
        <source>Run %1&apos;s model, settings, devices and data are in the forms; press Start to train it again.</source>
        <translation>运行 %1 的模型、设置、设备和数据已填入表单；按“开始”即可再次训练。</translation>
    </message>
    <message>
        <source>Run %1 cannot be resumed: load the data it was trained on (%2) first.</source>
        <translation>运行 %1 无法继续：请先加载它训练时所用的数据（%2）。</translation>
    </message>
    <message>
        <source>Run %1 cannot be resumed: %2</source>
        <translation>运行 %1 无法继续：%2</translation>
    </message>
    <message>
        <source>Try it</source>
        <translation>试一试</translation>
    </message>
    <message>
        <source>Per-class report</source>
        <translation>逐类报告</translation>
    </message>
    <message>
        <source>Write TensorBoard event files</source>
        <translation>写入 TensorBoard 事件文件</translation>
    </message>
    <message>
        <source>Kept runs also write TensorBoard event files while they train (in the run&apos;s folder, as Keras&apos; TensorBoard callback does), so Runs → Export → Open in TensorBoard follows them live</source>
        <translation>保存的运行在训练时也写入 TensorBoard 事件文件（在运行的文件夹中，与 Keras 的 TensorBoard 回调相同），因此“运行 → 导出 → 在 TensorBoard 中打开”可实时跟踪它们</translation>
    </message>
    <message>
        <source>Follow a run in another process…</source>
        <translation>跟随另一个进程中的运行…</translation>
    </message>
    <message>
        <source>Follow a run</source>
        <translation>跟随运行</translation>
    </message>
    <message>
        <source>Training events (*.jsonl *.json *.log);;All files (*)</source>
        <translation>训练事件 (*.jsonl *.json *.log);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Show a run of mirrorlab-cli live, from the file its `train --json` output goes to: mpirun -np 2 mirrorlab-cli train --json … &gt; job.jsonl</source>
        <translation>从 `train --json` 输出所写入的文件中实时显示 mirrorlab-cli 的运行：mpirun -np 2 mirrorlab-cli train --json … &gt; job.jsonl</translation>
    </message>
    <message>
        <source>Stop following the other process&apos;s run (it goes on)</source>
        <translation>停止跟随另一个进程的运行（该运行继续进行）</translation>
    </message>
    <message>
        <source>Train on several workers (MPI)…</source>
        <translation>在多个工作进程上训练 (MPI)…</translation>
    </message>
    <message>
        <source>MultiWorkerMirroredStrategy: the same model, data and settings trained by several mirrorlab-cli processes started with mpirun, shown here live</source>
        <translation>MultiWorkerMirroredStrategy：由 mpirun 启动的多个 mirrorlab-cli 进程训练同一模型、数据和设置，并在此实时显示</translation>
    </message>
    <message>
        <source>Run %1 cannot be resumed: it is not in the Runs panel (deleted, or kept by another store).</source>
        <translation>无法继续运行 %1：它不在“运行记录”面板中（已删除，或保存在另一个运行记录库中）。</translation>
    </message>
    <message>
        <source>A scaling experiment is running: wait for it, or cancel it in the Scaling panel.</source>
        <translation>扩展实验正在运行：请等待其结束，或在“扩展性”面板中取消。</translation>
    </message>
    <message>
        <source>Run %1 cannot be resumed now: %2</source>
        <translation>现在无法继续运行 %1：%2</translation>
    </message>
    <message>
        <source>The charts show no run to export; train one, or choose a run in the Runs panel and export it there.</source>
        <translation>图表中没有可导出的运行；请先训练一个，或在“运行”面板中选择一个运行并在那里导出。</translation>
    </message>
    <message>
        <source>Writing the Keras export; MirrorLab closes when it is written…</source>
        <translation>正在写入 Keras 导出；写完后 MirrorLab 即关闭…</translation>
    </message>
    <message>
        <source>Run %1&apos;s data (%2) could not be loaded: %3. The forms hold its model, settings and devices, but Start would train on the data loaded now (%4); load the run&apos;s data in the Data panel first.</source>
        <translation>无法加载运行 %1 的数据（%2）：%3。表单中已是它的模型、设置和设备，但“开始”会使用当前已加载的数据（%4）进行训练；请先在“数据”面板中加载该运行的数据。</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>The export failed, so MirrorLab stays open; close it again when you have read why.</source>
        <translation>导出失败，因此 MirrorLab 保持打开；看过原因后请再次关闭。</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::ModelPanel</name>
    <message>
        <source>Preset:</source>
        <translation>预设：</translation>
    </message>
    <message>
        <source>Load…</source>
        <translation>加载…</translation>
    </message>
    <message>
        <source>Save…</source>
        <translation>保存…</translation>
    </message>
    <message>
        <source>Save the model&apos;s layers as JSON</source>
        <translation>把模型的各层保存为 JSON</translation>
    </message>
    <message>
        <source>Sequence length:</source>
        <translation>序列长度：</translation>
    </message>
    <message>
        <source>Tokens per sample (input_length); the data is padded or truncated to it</source>
        <translation>每个样本的词元数（input_length）；数据会被填充或截断到这个长度</translation>
    </message>
    <message>
        <source>tokens per sample</source>
        <translation>个词元（每个样本）</translation>
    </message>
    <message>
        <source>Layers</source>
        <translation>层</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Type</source>
        <translation>类型</translation>
    </message>
    <message>
        <source>Arguments</source>
        <translation>参数</translation>
    </message>
    <message>
        <source>Output shape</source>
        <translation>输出形状</translation>
    </message>
    <message>
        <source>Params</source>
        <translation>参数量</translation>
    </message>
    <message>
        <source>Add</source>
        <translation>添加</translation>
    </message>
    <message>
        <source>Insert a layer after the selected one</source>
        <translation>在选中的层之后插入一层</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <source>Move up</source>
        <translation>上移</translation>
    </message>
    <message>
        <source>Move down</source>
        <translation>下移</translation>
    </message>
    <message>
        <source>Layer arguments</source>
        <translation>层参数</translation>
    </message>
    <message>
        <source>Summary</source>
        <translation>概要</translation>
    </message>
    <message>
        <source>Keras tutorial (Reuters, %1 params)</source>
        <translation>Keras 教程（Reuters，%1 个参数）</translation>
    </message>
    <message>
        <source>Small CNN with global max pooling (%1 params)</source>
        <translation>带全局最大池化的小型 CNN（%1 个参数）</translation>
    </message>
    <message>
        <source>Wider CNN with dropout (%1 params)</source>
        <translation>带 dropout 的较宽 CNN（%1 个参数）</translation>
    </message>
    <message>
        <source>Baseline: embedding + global max pooling (%1 params)</source>
        <translation>基线：嵌入 + 全局最大池化（%1 个参数）</translation>
    </message>
    <message>
        <source>Custom model</source>
        <translation>自定义模型</translation>
    </message>
    <message>
        <source>Fix the model before saving it</source>
        <translation>请先修正模型再保存</translation>
    </message>
    <message>
        <source>Total params: %1</source>
        <translation>参数总数：%1</translation>
    </message>
    <message>
        <source>&lt;-- error, see below</source>
        <translation>&lt;-- 错误，见下文</translation>
    </message>
    <message>
        <source>Cannot build this model: %1</source>
        <translation>无法构建这个模型：%1</translation>
    </message>
    <message>
        <source>Loaded %1</source>
        <translation>已加载 %1</translation>
    </message>
    <message>
        <source>Could not load the model (the current one is kept): %1</source>
        <translation>无法加载模型（保留当前模型）：%1</translation>
    </message>
    <message>
        <source>Cannot save: the model is invalid (%1)</source>
        <translation>无法保存：模型无效（%1）</translation>
    </message>
    <message>
        <source>Cannot save the model to %1: %2</source>
        <translation>无法把模型保存到 %1：%2</translation>
    </message>
    <message>
        <source>Saved %1</source>
        <translation>已保存 %1</translation>
    </message>
    <message>
        <source>Load model</source>
        <translation>加载模型</translation>
    </message>
    <message>
        <source>Model JSON (*.json);;All files (*)</source>
        <translation>模型 JSON (*.json);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Save model</source>
        <translation>保存模型</translation>
    </message>
    <message>
        <source>The saved model could not be restored: %1</source>
        <translation>无法恢复已保存的模型：%1</translation>
    </message>
    <message>
        <source>Ready-made models; the tutorial&apos;s comes first</source>
        <translation>现成的模型；教程的模型排在第一个</translation>
    </message>
    <message>
        <source>The model&apos;s layers in order; select one to edit its arguments below</source>
        <translation>模型的各层（按顺序）；选中一层即可在下方编辑它的参数</translation>
    </message>
    <message>
        <source>Remove the selected layer</source>
        <translation>删除选中的层</translation>
    </message>
    <message>
        <source>Move the selected layer one place up</source>
        <translation>把选中的层上移一位</translation>
    </message>
    <message>
        <source>Move the selected layer one place down</source>
        <translation>把选中的层下移一位</translation>
    </message>
    <message>
        <source>model.summary() as Keras prints it</source>
        <translation>与 Keras 打印的 model.summary() 相同</translation>
    </message>
    <message>
        <source>Loaded %1 with its weights: the next run starts from them</source>
        <translation>已加载 %1 及其权重：下一次运行将从这些权重开始</translation>
    </message>
    <message>
        <source>Load a model JSON file (ours, or Keras&apos; model.to_json()), a Keras .keras file with its weights, or a Keras .weights.h5 for the model in the form</source>
        <translation>加载模型 JSON 文件（本程序的，或 Keras 的 model.to_json()）、带权重的 Keras .keras 文件，或适用于表单中模型的 Keras .weights.h5 文件</translation>
    </message>
    <message>
        <source>a weights file holds no model; make the form a valid model that matches it first (%1)</source>
        <translation>权重文件不包含模型；请先在表单中建立与之匹配的有效模型（%1）</translation>
    </message>
    <message>
        <source>Loaded the weights in %1 into this model: the next run starts from them</source>
        <translation>已将 %1 中的权重加载到此模型：下一次运行将从这些权重开始</translation>
    </message>
    <message>
        <source>Models (*.json *.keras *.weights.h5);;Model JSON (*.json);;Keras model (*.keras);;Keras weights for this model (*.weights.h5 *.h5);;All files (*)</source>
        <translation>模型 (*.json *.keras *.weights.h5);;模型 JSON (*.json);;Keras 模型 (*.keras);;此模型的 Keras 权重 (*.weights.h5 *.h5);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Optimizer from the file: %1</source>
        <translation>文件中的优化器：%1</translation>
    </message>
    <message>
        <source>the model in the form changed while its weights were read; load the weights file again</source>
        <translation>读取权重期间表单中的模型已更改；请重新加载权重文件</translation>
    </message>
    <message>
        <source>Loading %1…</source>
        <translation>正在加载 %1…</translation>
    </message>
    <message>
        <source>the form changed while %1 was read; load it again to replace what the form holds now</source>
        <translation>读取 %1 期间表单已更改；请重新加载它以替换表单当前的内容</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::MonitorPanel</name>
    <message>
        <source>data wait</source>
        <translation>等待数据</translation>
    </message>
    <message>
        <source>forward</source>
        <translation>前向</translation>
    </message>
    <message>
        <source>backward</source>
        <translation>反向</translation>
    </message>
    <message>
        <source>all-reduce</source>
        <translation>全归约</translation>
    </message>
    <message>
        <source>update</source>
        <translation>更新</translation>
    </message>
    <message>
        <source>%1 ms</source>
        <translation>%1 毫秒</translation>
    </message>
    <message>
        <source>limit %1</source>
        <translation>上限 %1</translation>
    </message>
    <message>
        <source>no limit</source>
        <translation>无上限</translation>
    </message>
    <message>
        <source>%1 in use · peak %2 · %3</source>
        <translation>已用 %1 · 峰值 %2 · %3</translation>
    </message>
    <message>
        <source> · %1 free on the GPU</source>
        <translation> · GPU 剩余 %1</translation>
    </message>
    <message>
        <source>No memory reported yet: start a run to see each logical device&apos;s memory.</source>
        <translation>尚未报告内存：开始一次运行即可看到每个逻辑设备的内存。</translation>
    </message>
    <message>
        <source>Throughput</source>
        <translation>吞吐量</translation>
    </message>
    <message>
        <source>samples/s
(mean of the last %1 steps)</source>
        <translation>样本/秒
（最近 %1 步的平均值）</translation>
    </message>
    <message>
        <source>samples/s</source>
        <translation>样本/秒</translation>
    </message>
    <message>
        <source>Memory per logical device</source>
        <translation>每个逻辑设备的内存</translation>
    </message>
    <message>
        <source>Blue: in use · orange tick: peak · bar end: the device&apos;s limit (hatched: no limit, scaled to the largest peak)</source>
        <translation>蓝色：已用 · 橙色刻度：峰值 · 条形末端：设备的上限（斜线：无上限，按最大峰值缩放）</translation>
    </message>
    <message>
        <source>Step time per phase</source>
        <translation>各阶段的单步耗时</translation>
    </message>
    <message>
        <source>step</source>
        <translation>步</translation>
    </message>
    <message>
        <source>ms</source>
        <translation>毫秒</translation>
    </message>
    <message>
        <source>Replica %1 · %2</source>
        <translation>副本 %1 · %2</translation>
    </message>
    <message>
        <source>Replica %1</source>
        <translation>副本 %1</translation>
    </message>
    <message>
        <source>No steps yet.</source>
        <translation>还没有训练步。</translation>
    </message>
    <message>
        <source>Step %1 on replica %2, total %3:</source>
        <translation>副本 %2 上的第 %1 步，共 %3：</translation>
    </message>
    <message>
        <source>—</source>
        <translation>—</translation>
    </message>
    <message>
        <source>Samples per second over the last steps</source>
        <translation>最近各步的每秒样本数</translation>
    </message>
    <message>
        <source>The replica whose step time the chart shows</source>
        <translation>图表显示其步耗时的副本</translation>
    </message>
    <message>
        <source>Each step&apos;s time, split into its phases and stacked</source>
        <translation>每一步的耗时，按阶段拆分并堆叠显示</translation>
    </message>
    <message>
        <source>Replica</source>
        <translation>副本</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::MpiHosts</name>
    <message>
        <source>&apos;%1&apos; is not a host: give host names or addresses separated by commas, each with its number of workers after a colon where it runs several (localhost:2,node2:2).</source>
        <translation>“%1”不是主机：请给出以逗号分隔的主机名或地址，在运行多个工作进程的主机后加冒号和进程数（localhost:2,node2:2）。</translation>
    </message>
    <message>
        <source>The first host runs rank 0, which reads the job&apos;s files and keeps the run on this computer: put this computer first (%1).</source>
        <translation>第一个主机运行 rank 0，它读取作业的文件并把运行保存在本机：请把本机放在最前面（%1）。</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::RunsPanel</name>
    <message>
        <source>Run</source>
        <translation>运行</translation>
    </message>
    <message>
        <source>Devices</source>
        <translation>设备</translation>
    </message>
    <message>
        <source>Data</source>
        <translation>数据</translation>
    </message>
    <message>
        <source>Optimizer</source>
        <translation>优化器</translation>
    </message>
    <message>
        <source>Epochs</source>
        <translation>轮数</translation>
    </message>
    <message>
        <source>Best val_loss</source>
        <translation>最佳 val_loss</translation>
    </message>
    <message>
        <source>Accuracy</source>
        <translation>准确率</translation>
    </message>
    <message>
        <source>Val accuracy</source>
        <translation>验证准确率</translation>
    </message>
    <message>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Check a run to draw its curves on the training charts</source>
        <translation>勾选一次运行，把它的曲线画到训练图表上</translation>
    </message>
    <message>
        <source>Export history as CSV…</source>
        <translation>把历史导出为 CSV…</translation>
    </message>
    <message>
        <source>The selected run&apos;s per-epoch metrics, in the columns Keras&apos; CSVLogger writes</source>
        <translation>所选运行的每轮指标，列与 Keras 的 CSVLogger 相同</translation>
    </message>
    <message>
        <source>Export charts as PNG…</source>
        <translation>把图表导出为 PNG…</translation>
    </message>
    <message>
        <source>%1 lr %2, batch %3</source>
        <translation>%1 学习率 %2，批次 %3</translation>
    </message>
    <message>
        <source>%1/%2</source>
        <translation>%1/%2</translation>
    </message>
    <message>
        <source>%1 (epoch %2)</source>
        <translation>%1（第 %2 轮）</translation>
    </message>
    <message>
        <source>failed: %1</source>
        <translation>失败：%1</translation>
    </message>
    <message>
        <source>early stopping, restored epoch %1</source>
        <translation>早停，已恢复第 %1 轮</translation>
    </message>
    <message>
        <source>early stopping</source>
        <translation>早停</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>finished</source>
        <translation>已完成</translation>
    </message>
    <message>
        <source>paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>Overfitting from epoch %1</source>
        <translation>从第 %1 轮开始过拟合</translation>
    </message>
    <message>
        <source>There is no run %1.</source>
        <translation>没有运行 %1。</translation>
    </message>
    <message>
        <source>Cannot write %1: %2</source>
        <translation>无法写入 %1：%2</translation>
    </message>
    <message>
        <source>There are no training charts to export.</source>
        <translation>没有可导出的训练图表。</translation>
    </message>
    <message>
        <source>The training charts could not be drawn.</source>
        <translation>无法绘制训练图表。</translation>
    </message>
    <message>
        <source>Export history as CSV</source>
        <translation>把历史导出为 CSV</translation>
    </message>
    <message>
        <source>run%1_history.csv</source>
        <translation>运行%1_历史.csv</translation>
    </message>
    <message>
        <source>CSV files (*.csv)</source>
        <translation>CSV 文件 (*.csv)</translation>
    </message>
    <message>
        <source>Export charts as PNG</source>
        <translation>把图表导出为 PNG</translation>
    </message>
    <message>
        <source>training_charts.png</source>
        <translation>训练图表.png</translation>
    </message>
    <message>
        <source>PNG images (*.png)</source>
        <translation>PNG 图像 (*.png)</translation>
    </message>
    <message>
        <source>Runs</source>
        <translation>运行记录</translation>
    </message>
    <message>
        <source>The loss, accuracy and top-5 charts as one picture</source>
        <translation>把损失、准确率和 top-5 图表合成一张图片</translation>
    </message>
    <message>
        <source>Every kept run, earlier sessions&apos; too; tick a run to draw its curves in the charts, double-click its name or note to edit it</source>
        <translation>所有保存的运行（包括以前会话的）；勾选某次运行可在图表中绘制其曲线，双击名称或备注可编辑</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <source>Note</source>
        <translation>备注</translation>
    </message>
    <message>
        <source>Filter runs (name, note, data, devices, status)</source>
        <translation>筛选运行（名称、备注、数据、设备、状态）</translation>
    </message>
    <message>
        <source>Filter runs</source>
        <translation>筛选运行</translation>
    </message>
    <message>
        <source>Clear filter</source>
        <translation>清除筛选</translation>
    </message>
    <message>
        <source>Show only the runs whose name, note, data, devices, optimizer or status contain this text</source>
        <translation>只显示名称、备注、数据、设备、优化器或状态包含此文字的运行</translation>
    </message>
    <message>
        <source>Train again</source>
        <translation>再次训练</translation>
    </message>
    <message>
        <source>Put the selected run&apos;s model, settings, devices and data back into the forms</source>
        <translation>把所选运行的模型、设置、设备和数据填回表单</translation>
    </message>
    <message>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <source>Continue the selected run from its last checkpoint (the end of its last finished epoch)</source>
        <translation>从所选运行的最后一个检查点（最后完成的轮次结束时）继续训练</translation>
    </message>
    <message>
        <source>Delete…</source>
        <translation>删除…</translation>
    </message>
    <message>
        <source>Delete the selected run, its metrics and its checkpoints</source>
        <translation>删除所选运行及其指标和检查点</translation>
    </message>
    <message>
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <source>Runs are kept in %1</source>
        <translation>运行保存在 %1</translation>
    </message>
    <message>
        <source>Run %1</source>
        <translation>运行 %1</translation>
    </message>
    <message>
        <source>Double-click to rename</source>
        <translation>双击以重命名</translation>
    </message>
    <message>
        <source>This run is not kept, so it cannot be renamed</source>
        <translation>此运行未被保存，因此无法重命名</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>interrupted</source>
        <translation>已中断</translation>
    </message>
    <message>
        <source>running elsewhere</source>
        <translation>在别处运行中</translation>
    </message>
    <message>
        <source>Delete run</source>
        <translation>删除运行</translation>
    </message>
    <message>
        <source>Delete run %1 with its metrics and checkpoints? This cannot be undone.</source>
        <translation>删除运行 %1 及其指标和检查点？此操作无法撤销。</translation>
    </message>
    <message>
        <source>This run has no checkpoint: it ended before its first epoch finished</source>
        <translation>此运行没有检查点：它在第一个轮次完成前就结束了</translation>
    </message>
    <message>
        <source>Export to TensorBoard…</source>
        <translation>导出到 TensorBoard…</translation>
    </message>
    <message>
        <source>The selected run&apos;s metrics as TensorBoard event files, as Keras&apos; TensorBoard callback writes them</source>
        <translation>将所选运行的指标写成 TensorBoard 事件文件，与 Keras 的 TensorBoard 回调写出的一致</translation>
    </message>
    <message>
        <source>Open in TensorBoard</source>
        <translation>在 TensorBoard 中打开</translation>
    </message>
    <message>
        <source>Start TensorBoard on the selected run and open it in the browser</source>
        <translation>为所选运行启动 TensorBoard 并在浏览器中打开</translation>
    </message>
    <message>
        <source>Run %1 is not kept in the run store, so it has no event files to export.</source>
        <translation>运行 %1 未保存在运行库中，没有可导出的事件文件。</translation>
    </message>
    <message>
        <source>Run %1 is not kept in the run store, so it has no event files to show.</source>
        <translation>运行 %1 未保存在运行库中，没有可显示的事件文件。</translation>
    </message>
    <message>
        <source>TensorBoard is not installed (there is no &quot;tensorboard&quot; program on PATH). Install it with

    pip install tensorboard

then choose Open in TensorBoard again. The run&apos;s event files are in %1; &quot;tensorboard --logdir %1&quot; shows them.</source>
        <translation>未安装 TensorBoard（PATH 中没有 &quot;tensorboard&quot; 程序）。请用以下命令安装：

    pip install tensorboard

然后再次选择“在 TensorBoard 中打开”。该运行的事件文件位于 %1；&quot;tensorboard --logdir %1&quot; 可显示它们。</translation>
    </message>
    <message>
        <source>TensorBoard (%1) did not start: %2</source>
        <translation>TensorBoard（%1）未能启动：%2</translation>
    </message>
    <message>
        <source>TensorBoard is starting on %1; the browser opens when it is ready.</source>
        <translation>TensorBoard 正在 %1 上启动；就绪后将打开浏览器。</translation>
    </message>
    <message>
        <source>Export to TensorBoard: choose the log folder</source>
        <translation>导出到 TensorBoard：选择日志文件夹</translation>
    </message>
    <message>
        <source>Export to TensorBoard</source>
        <translation>导出到 TensorBoard</translation>
    </message>
    <message>
        <source>Run %1&apos;s event files are in %2/train and %2/validation. Show them with

    tensorboard --logdir %2</source>
        <translation>运行 %1 的事件文件位于 %2/train 和 %2/validation。用以下命令查看：

    tensorboard --logdir %2</translation>
    </message>
    <message>
        <source>The selected run&apos;s history as CSV or TensorBoard event files, its model as a Keras file, or the charts as PNG</source>
        <translation>将所选运行的历史导出为 CSV 或 TensorBoard 事件文件，将其模型导出为 Keras 文件，或将图表导出为 PNG</translation>
    </message>
    <message>
        <source>Export as Keras model…</source>
        <translation>导出为 Keras 模型…</translation>
    </message>
    <message>
        <source>The selected run&apos;s model and weights (its last checkpoint) as a Keras 3 .keras file: keras.saving.load_model() opens it</source>
        <translation>将所选运行的模型和权重（其最后一个检查点）导出为 Keras 3 .keras 文件：可用 keras.saving.load_model() 打开</translation>
    </message>
    <message>
        <source>Cannot export run %1 as a Keras model: %2</source>
        <translation>无法将运行 %1 导出为 Keras 模型：%2</translation>
    </message>
    <message>
        <source>Export as Keras model</source>
        <translation>导出为 Keras 模型</translation>
    </message>
    <message>
        <source>run%1.keras</source>
        <translation>运行%1.keras</translation>
    </message>
    <message>
        <source>Keras models (*.keras)</source>
        <translation>Keras 模型 (*.keras)</translation>
    </message>
    <message>
        <source>Run %1 is training without TensorBoard event files (Training → Write TensorBoard event files).</source>
        <translation>运行 %1 正在训练，但没有写入 TensorBoard 事件文件（训练 → 写入 TensorBoard 事件文件）。</translation>
    </message>
    <message>
        <source>What you typed, not kept:
%1</source>
        <translation>您输入的内容（未保存）：
%1</translation>
    </message>
    <message>
        <source>another export is being written; wait for it to finish</source>
        <translation>另一个导出正在写入；请等待其完成</translation>
    </message>
    <message>
        <source>Exporting run %1 to %2…</source>
        <translation>正在将运行 %1 导出到 %2…</translation>
    </message>
    <message>
        <source>Exported run %1 to %2</source>
        <translation>已将运行 %1 导出到 %2</translation>
    </message>
    <message>
        <source> (%1 of %2 listed)</source>
        <translation>（列出 %2 个中的 %1 个）</translation>
    </message>
    <message>
        <source>The %1 most recent of the store&apos;s %2 runs are listed here; mirrorlab-cli runs --store &quot;%3&quot; lists them all (train --resume, export and runs delete take any of them).</source>
        <translation>此处列出存储中 %2 个运行里最近的 %1 个；mirrorlab-cli runs --store &quot;%3&quot; 会列出全部（train --resume、export 和 runs delete 可处理其中任何一个）。</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::ScalingPanel</name>
    <message>
        <source>up to </source>
        <translation>最多 </translation>
    </message>
    <message>
        <source> replicas</source>
        <translation> 个副本</translation>
    </message>
    <message>
        <source>Runs 1, 2, … up to this many replicas of the device configuration&apos;s kind</source>
        <translation>依次使用 1、2、…… 直到这么多个与当前设备配置同类的副本</translation>
    </message>
    <message>
        <source> steps each</source>
        <translation> 步/次</translation>
    </message>
    <message>
        <source>Timed training steps per run (after a few untimed warm-up steps)</source>
        <translation>每次运行计时的训练步数（之前还有几步不计时的预热）</translation>
    </message>
    <message>
        <source>Run scaling experiment</source>
        <translation>运行扩展性实验</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Export CSV…</source>
        <translation>导出 CSV…</translation>
    </message>
    <message>
        <source>Every experiment&apos;s rows, for comparison in a spreadsheet</source>
        <translation>所有实验的数据行，便于在电子表格中比较</translation>
    </message>
    <message>
        <source>Clear earlier</source>
        <translation>清除早先的</translation>
    </message>
    <message>
        <source>Keep only the latest experiment</source>
        <translation>只保留最新的实验</translation>
    </message>
    <message>
        <source>Measures how throughput grows with replicas. Uses the Devices, Model and Data panels&apos; settings.</source>
        <translation>测量吞吐量如何随副本数增长。使用“设备”、“模型”和“数据”面板中的设置。</translation>
    </message>
    <message>
        <source>Throughput</source>
        <translation>吞吐量</translation>
    </message>
    <message>
        <source>Time per step</source>
        <translation>每步耗时</translation>
    </message>
    <message>
        <source>Scaling efficiency</source>
        <translation>扩展效率</translation>
    </message>
    <message>
        <source>Experiment</source>
        <translation>实验</translation>
    </message>
    <message>
        <source>Devices</source>
        <translation>设备</translation>
    </message>
    <message>
        <source>Replicas</source>
        <translation>副本数</translation>
    </message>
    <message>
        <source>Shards</source>
        <translation>分片</translation>
    </message>
    <message>
        <source>All-reduce</source>
        <translation>全归约</translation>
    </message>
    <message>
        <source>Samples/s</source>
        <translation>样本/秒</translation>
    </message>
    <message>
        <source>ms/step</source>
        <translation>毫秒/步</translation>
    </message>
    <message>
        <source>Compute ms</source>
        <translation>计算（毫秒）</translation>
    </message>
    <message>
        <source>Communication ms</source>
        <translation>通信（毫秒）</translation>
    </message>
    <message>
        <source>Other ms</source>
        <translation>其他（毫秒）</translation>
    </message>
    <message>
        <source>Speed-up</source>
        <translation>加速比</translation>
    </message>
    <message>
        <source>Efficiency</source>
        <translation>效率</translation>
    </message>
    <message>
        <source>Nothing to measure: no model, devices or data are set.</source>
        <translation>没有可测量的内容：尚未设置模型、设备或数据。</translation>
    </message>
    <message>
        <source>Experiment %1: training on 1 replica…</source>
        <translation>实验 %1：正在用 1 个副本训练…</translation>
    </message>
    <message>
        <source>Cancelling after the current step…</source>
        <translation>当前训练步结束后取消…</translation>
    </message>
    <message>
        <source>Experiment %1: training on %2 replicas…</source>
        <translation>实验 %1：正在用 %2 个副本训练…</translation>
    </message>
    <message>
        <source>Experiment %1 finished: %2 runs of %3 steps.</source>
        <translation>实验 %1 完成：%2 次运行，每次 %3 步。</translation>
    </message>
    <message>
        <source>Experiment %1 stopped: %2</source>
        <translation>实验 %1 已停止：%2</translation>
    </message>
    <message>
        <source>Experiment %1 cancelled; the runs so far are kept.</source>
        <translation>实验 %1 已取消；已完成的运行会保留。</translation>
    </message>
    <message>
        <source>Cannot write %1: %2</source>
        <translation>无法写入 %1：%2</translation>
    </message>
    <message>
        <source>Export scaling experiments</source>
        <translation>导出扩展性实验</translation>
    </message>
    <message>
        <source>CSV files (*.csv)</source>
        <translation>CSV 文件 (*.csv)</translation>
    </message>
    <message>
        <source>%1×</source>
        <translation>%1×</translation>
    </message>
    <message>
        <source>%1%</source>
        <translation>%1%</translation>
    </message>
    <message>
        <source>replicas</source>
        <translation>副本数</translation>
    </message>
    <message>
        <source>samples/s</source>
        <translation>样本/秒</translation>
    </message>
    <message>
        <source>#%1 %2</source>
        <translation>#%1 %2</translation>
    </message>
    <message>
        <source>ideal (linear)</source>
        <translation>理想（线性）</translation>
    </message>
    <message>
        <source>compute</source>
        <translation>计算</translation>
    </message>
    <message>
        <source>communication</source>
        <translation>通信</translation>
    </message>
    <message>
        <source>other</source>
        <translation>其他</translation>
    </message>
    <message>
        <source>replicas (experiment #%1)</source>
        <translation>副本数（实验 #%1）</translation>
    </message>
    <message>
        <source>ms per step</source>
        <translation>每步毫秒数</translation>
    </message>
    <message>
        <source>efficiency (%)</source>
        <translation>效率（%）</translation>
    </message>
    <message>
        <source>ideal (100%)</source>
        <translation>理想（100%）</translation>
    </message>
    <message>
        <source>Effective batch size</source>
        <translation>有效批次大小</translation>
    </message>
    <message>
        <source>Every run trains on the same global batch of %1 samples with the same seed. The replicas share it: %2. One step makes the same progress however many replicas share it, so the runs differ only in speed.</source>
        <translation>每次运行都使用相同的随机种子，在同样大小为 %1 个样本的全局批次上训练。各副本分担这个批次：%2。无论多少个副本分担，一步取得的训练进展都相同，所以各次运行只有速度不同。</translation>
    </message>
    <message>
        <source>Why efficiency drops</source>
        <translation>效率为什么会下降</translation>
    </message>
    <message>
        <source>&lt;b&gt;Communication.&lt;/b&gt; Every step all-reduces the whole gradient and ends at a barrier, so each replica waits for the slowest one; that time does not shrink with more replicas.</source>
        <translation>&lt;b&gt;通信。&lt;/b&gt;每一步都要对整个梯度做全归约，并在屏障处结束，所以每个副本都要等最慢的那个；这部分时间不会因为副本增多而缩短。</translation>
    </message>
    <message>
        <source>&lt;b&gt;A batch too small to share.&lt;/b&gt; %1 samples over %2 replicas leaves %3 per replica: too little work to keep a device busy, while each step&apos;s fixed costs (starting the work, synchronising, updating the variables) stay the same.</source>
        <translation>&lt;b&gt;批次太小，不够分。&lt;/b&gt;%1 个样本分给 %2 个副本，每个副本只剩 %3 个：工作量太少，设备忙不起来，而每一步的固定开销（启动计算、同步、更新变量）却不变。</translation>
    </message>
    <message>
        <source>&lt;b&gt;Virtual devices share one physical device.&lt;/b&gt; CPU replicas split the same cores and memory bandwidth, and virtual GPUs carved from one GPU share its compute units, so N of them cannot be N times faster than one. Real speed-ups need replicas on separate devices.</source>
        <translation>&lt;b&gt;虚拟设备共享同一个物理设备。&lt;/b&gt;CPU 副本分用同样的核心和内存带宽，从同一块 GPU 划分出的虚拟 GPU 共享它的计算单元，所以 N 个副本不可能比一个快 N 倍。真正的加速需要副本位于不同的设备上。</translation>
    </message>
    <message>
        <source>Learning rate for larger global batches</source>
        <translation>更大全局批次的学习率</translation>
    </message>
    <message>
        <source>Usually one keeps the batch per replica and adds replicas, so the global batch grows with them. The rule of thumb (Goyal et al., 2017): scale the learning rate by the same factor (linear scaling), with a warm-up over the first epochs; for Adam-type optimizers a square-root scaling is often safer. For example, %1 replicas × %2 = a global batch of %3: learning rate %4 → %5 (linear) or %6 (square root). This experiment keeps the global batch at %2, so the learning rate stays at %4.</source>
        <translation>通常的做法是保持每个副本的批次不变而增加副本，于是全局批次随副本数增大。经验法则（Goyal 等，2017）：按同样的倍数放大学习率（线性缩放），并在最初几轮进行预热；对 Adam 一类的优化器，按平方根缩放往往更稳妥。例如 %1 个副本 × %2 = 全局批次 %3：学习率 %4 → %5（线性）或 %6（平方根）。本实验保持全局批次为 %2，所以学习率保持 %4 不变。</translation>
    </message>
    <message>
        <source>ring</source>
        <translation>环形</translation>
    </message>
    <message>
        <source>reduce to one device</source>
        <translation>归约到一个设备</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>%1, batch %2</source>
        <translation>%1，批次 %2</translation>
    </message>
    <message>
        <source>Most replicas</source>
        <translation>最多副本数</translation>
    </message>
    <message>
        <source>Steps per run</source>
        <translation>每次运行的步数</translation>
    </message>
    <message>
        <source>Train a few steps with 1, 2, … replicas and compare their throughput</source>
        <translation>分别用 1、2、… 个副本训练若干步，并比较吞吐量</translation>
    </message>
    <message>
        <source>Stop the experiment after the current step</source>
        <translation>当前训练步结束后停止实验</translation>
    </message>
    <message>
        <source>Scaling results</source>
        <translation>扩展实验结果</translation>
    </message>
    <message>
        <source>One row per run of every experiment</source>
        <translation>每个实验的每次运行占一行</translation>
    </message>
    <message>
        <source>Measured</source>
        <translation>实测</translation>
    </message>
    <message>
        <source>What if</source>
        <translation>假如</translation>
    </message>
    <message>
        <source>Predict more workers, other links and batch sizes from what was measured here</source>
        <translation>根据本机的实测结果，预测更多工作进程、其他链路和批量大小下的表现</translation>
    </message>
    <message>
        <source>model, one process</source>
        <translation>模型（单进程）</translation>
    </message>
    <message>
        <source>what if: workers × %1 on %2</source>
        <translation>假如：工作进程 × %1，经由 %2</translation>
    </message>
    <message>
        <source>Measured runs and what-if predictions</source>
        <translation>实测运行与假设预测</translation>
    </message>
    <message>
        <source>The runs measured here, and predictions for clusters that are not here</source>
        <translation>本机实测的运行，以及对本机之外集群的预测</translation>
    </message>
    <message>
        <source>Experiment %1 finished: %2 runs of %3 timed steps (the data holds no more batches per epoch; %4 were asked for).</source>
        <translation>实验 %1 完成：%2 次运行，每次计时 %3 步（数据每轮没有更多批次；请求的是 %4 步）。</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::StepView</name>
    <message>
        <source>%1 ms</source>
        <translation>%1 毫秒</translation>
    </message>
    <message>
        <source>ring all-reduce</source>
        <translation>环形全归约</translation>
    </message>
    <message>
        <source>reduce to one device, then broadcast</source>
        <translation>归约到一个设备，然后广播</translation>
    </message>
    <message>
        <source>NCCL all-reduce</source>
        <translation>NCCL 全归约</translation>
    </message>
    <message>
        <source>no all-reduce</source>
        <translation>没有全归约</translation>
    </message>
    <message>
        <source>1 replica</source>
        <translation>1 个副本</translation>
    </message>
    <message>
        <source>%1 replicas</source>
        <translation>%1 个副本</translation>
    </message>
    <message>
        <source>not needed</source>
        <translation>不需要</translation>
    </message>
    <message>
        <source>already in place</source>
        <translation>已就位</translation>
    </message>
    <message>
        <source>NCCL: the GPUs sum the gradients among themselves</source>
        <translation>NCCL：各 GPU 之间直接对梯度求和</translation>
    </message>
    <message>
        <source>Σ sum on %1</source>
        <translation>在 %1 上求和 Σ</translation>
    </message>
    <message>
        <source>NCCL all-reduce (solid: gradients in, dashed: the sum back out); each GPU sends %1, %2 in all</source>
        <translation>NCCL 全归约（实线：梯度送入，虚线：和送回）；每块 GPU 发送 %1，总计 %2</translation>
    </message>
    <message>
        <source>Reduce to one device, then broadcast (solid: gradients in, dashed: the sum back out); %1 moved in all</source>
        <translation>归约到一个设备，然后广播（实线：梯度送入，虚线：和送回）；总计传输 %1</translation>
    </message>
    <message>
        <source>One replica: its gradient already is the gradient of the whole batch; nothing to exchange.</source>
        <translation>只有一个副本：它的梯度就是整个批次的梯度，无需交换。</translation>
    </message>
    <message>
        <source>No step yet. Start a run (with Slow motion on to walk through it one step at a time): the global batch, its shards, each replica and the gradient exchange appear here with the step&apos;s real numbers.</source>
        <translation>还没有训练步。开始一次运行（打开“慢动作”即可一步一步地观察）：全局批次、它的分片、每个副本以及梯度交换都会连同这一步的真实数字显示在这里。</translation>
    </message>
    <message>
        <source>Global batch: %1 samples, split into %2 shards</source>
        <translation>全局批次：%1 个样本，分成 %2 个分片</translation>
    </message>
    <message>
        <source>%1 samples</source>
        <translation>%1 个样本</translation>
    </message>
    <message>
        <source>Replica %1</source>
        <translation>副本 %1</translation>
    </message>
    <message>
        <source>variables: %1 (own copy)</source>
        <translation>变量：%1（自己的副本）</translation>
    </message>
    <message>
        <source>shard: %1 samples</source>
        <translation>分片：%1 个样本</translation>
    </message>
    <message>
        <source>local loss: %1</source>
        <translation>本地损失：%1</translation>
    </message>
    <message>
        <source>‖g‖ local: %1</source>
        <translation>‖g‖ 本地：%1</translation>
    </message>
    <message>
        <source>‖g‖ after all-reduce: %1</source>
        <translation>‖g‖ 全归约后：%1</translation>
    </message>
    <message>
        <source>forward %1 · backward %2</source>
        <translation>前向 %1 · 反向 %2</translation>
    </message>
    <message>
        <source>GPU time: forward %1 · backward %2</source>
        <translation>GPU 时间：前向 %1 · 反向 %2</translation>
    </message>
    <message>
        <source>update %1</source>
        <translation>更新 %1</translation>
    </message>
    <message>
        <source>checksum %1</source>
        <translation>校验和 %1</translation>
    </message>
    <message>
        <source>checksum not reported</source>
        <translation>未报告校验和</translation>
    </message>
    <message>
        <source>Barrier: the step ends when the slowest replica is done (longest wait: replica %1, %2)</source>
        <translation>屏障：最慢的副本完成后这一步才结束（等待最久：副本 %1，%2）</translation>
    </message>
    <message>
        <source>One replica: nobody to wait for.</source>
        <translation>只有一个副本：无需等待。</translation>
    </message>
    <message>
        <source>Slow motion</source>
        <translation>慢动作</translation>
    </message>
    <message>
        <source>Hold the engine after every step, so you can walk through training one step at a time</source>
        <translation>每一步之后让引擎暂停，这样可以一步一步地观察训练</translation>
    </message>
    <message>
        <source>Next step</source>
        <translation>下一步</translation>
    </message>
    <message>
        <source>Run exactly one more training step, then wait again</source>
        <translation>再运行恰好一个训练步，然后再次等待</translation>
    </message>
    <message>
        <source>One synchronous step: every replica starts from the same variables, computes the gradients of its own shard of the global batch, the all-reduce sums those gradients so that every replica holds the gradient of the whole batch, and every replica applies the same update. So the copies stay identical, which the checksums show. The step is as fast as its slowest replica: the others wait at the barrier.</source>
        <translation>一个同步训练步：每个副本都从相同的变量出发，计算自己那一份全局批次分片的梯度；全归约把这些梯度相加，使每个副本都得到整个批次的梯度；然后每个副本执行相同的更新。因此各副本始终完全一致，校验和可以证明这一点。一步的速度取决于最慢的副本：其他副本在屏障处等待。</translation>
    </message>
    <message>
        <source>Update: %1, learning rate %2, the same step on every replica</source>
        <translation>更新：%1，学习率 %2，每个副本执行相同的一步</translation>
    </message>
    <message>
        <source>Copy the model</source>
        <translation>复制模型</translation>
    </message>
    <message>
        <source>Split the batch</source>
        <translation>拆分批次</translation>
    </message>
    <message>
        <source>Local gradients</source>
        <translation>本地梯度</translation>
    </message>
    <message>
        <source>All-reduce</source>
        <translation>全归约</translation>
    </message>
    <message>
        <source>Update</source>
        <translation>更新</translation>
    </message>
    <message>
        <source>Wait for everyone</source>
        <translation>等待所有副本</translation>
    </message>
    <message>
        <source>checksums not reported</source>
        <translation>未报告校验和</translation>
    </message>
    <message>
        <source>✓ variables identical</source>
        <translation>✓ 变量完全一致</translation>
    </message>
    <message>
        <source>✗ variables differ</source>
        <translation>✗ 变量不一致</translation>
    </message>
    <message>
        <source>%1, waiting for the first step</source>
        <translation>%1，等待第一步</translation>
    </message>
    <message>
        <source>No run yet</source>
        <translation>尚无运行</translation>
    </message>
    <message>
        <source>Step %1 (epoch %2, %3/%4) · %5 · %6</source>
        <translation>第 %1 步（第 %2 轮，%3/%4）· %5 · %6</translation>
    </message>
    <message>
        <source>paused: press Next step</source>
        <translation>已暂停：请点击“下一步”</translation>
    </message>
    <message>
        <source>Ring all-reduce: %1 reduce-scatter + %1 all-gather steps around the ring; each replica sends %2 per training step, %3 in all</source>
        <translation>环形全归约：沿环进行 %1 步归约-散射 + %1 步全收集；每个副本每个训练步发送 %2，总计 %3</translation>
    </message>
    <message numerus="yes">
        <source>Two levels: inside each worker its %n replica gradient(s) go into one buffer (%1 each, shared memory); across the %2 workers MPI_Allgather brings every worker the others&apos; (%3 received per worker, %4 in all); each worker then adds all %5 in one process&apos;s replica order: the same sums, bit for bit.</source>
        <translation>
            <numerusform>两个层级：每个工作进程内，它的 %n 个副本梯度先汇入一个缓冲区（每个 %1，共享内存）；在 %2 个工作进程之间，MPI_Allgather 把其他进程的梯度带给每个工作进程（每个进程接收 %3，合计 %4）；随后每个工作进程按单进程的副本顺序把全部 %5 个相加：和逐位相同。</numerusform>
        </translation>
    </message>
    <message>
        <source>worker %1: Σ in replica order</source>
        <translation>工作进程 %1：按副本顺序求和 Σ</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::TimelineView</name>
    <message>
        <source>%1 ms</source>
        <translation>%1 毫秒</translation>
    </message>
    <message>
        <source>data wait</source>
        <translation>等待数据</translation>
    </message>
    <message>
        <source>forward</source>
        <translation>前向</translation>
    </message>
    <message>
        <source>backward</source>
        <translation>反向</translation>
    </message>
    <message>
        <source>waiting at the barrier</source>
        <translation>在屏障处等待</translation>
    </message>
    <message>
        <source>all-reduce</source>
        <translation>全归约</translation>
    </message>
    <message>
        <source>update</source>
        <translation>更新</translation>
    </message>
    <message>
        <source>waiting for the slowest update</source>
        <translation>等待最慢的更新</translation>
    </message>
    <message>
        <source>Replica %1</source>
        <translation>副本 %1</translation>
    </message>
    <message>
        <source>Replica %1 · %2</source>
        <translation>副本 %1 · %2</translation>
    </message>
    <message>
        <source>Step %1 · %2</source>
        <translation>第 %1 步 · %2</translation>
    </message>
    <message>
        <source>%1: %2 (%3 to %4 into the step)</source>
        <translation>%1：%2（从这一步开始后的 %3 到 %4）</translation>
    </message>
    <message>
        <source>This replica had its gradients and waited for the slowest one before the all-reduce.</source>
        <translation>这个副本已经算完梯度，在全归约之前等待最慢的副本。</translation>
    </message>
    <message>
        <source>This replica had updated and waited for the others to finish the step.</source>
        <translation>这个副本已经完成更新，等待其他副本完成这一步。</translation>
    </message>
    <message>
        <source>Whole step: %1</source>
        <translation>整步：%1</translation>
    </message>
    <message>
        <source>No steps yet: start a run to see each replica&apos;s phases, step by step.</source>
        <translation>还没有训练步：开始一次运行，即可逐步看到每个副本的各个阶段。</translation>
    </message>
    <message>
        <source>Last %1 steps. Step %2: %3; slowest gradients on replica %4 (%5); longest wait at the barrier: replica %6 (%7)</source>
        <translation>最近 %1 步。第 %2 步：%3；梯度最慢的是副本 %4（%5）；在屏障处等待最久的是副本 %6（%7）</translation>
    </message>
    <message>
        <source>Last %1 steps. Step %2: %3 on one replica (no all-reduce, no waiting)</source>
        <translation>最近 %1 步。第 %2 步：%3，单个副本（没有全归约，无需等待）</translation>
    </message>
    <message>
        <source>#%1</source>
        <translation>#%1</translation>
    </message>
    <message>
        <source>%1 across the view · hover a bar for its numbers</source>
        <translation>整个视图跨度 %1 · 把鼠标悬停在条形上可查看数值</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::TrainingController</name>
    <message>
        <source>Runs are not kept: %1</source>
        <translation>运行未被保存：%1</translation>
    </message>
    <message>
        <source>Stop the current run before resuming another.</source>
        <translation>请先停止当前运行，再继续另一个运行。</translation>
    </message>
    <message>
        <source>This run is not kept: %1</source>
        <translation>此运行未被保存：%1</translation>
    </message>
    <message>
        <source>Run %1 is training; stop it before deleting it.</source>
        <translation>运行 %1 正在训练；请先停止再删除。</translation>
    </message>
    <message>
        <source>Stopped following the other process&apos;s run to train here.</source>
        <translation>已停止跟随另一个进程的运行，以便在此训练。</translation>
    </message>
    <message>
        <source>Stopped following this run; it goes on in its own process.</source>
        <translation>已停止跟随此运行；它在自己的进程中继续进行。</translation>
    </message>
    <message>
        <source>A run is in progress: stop it before following another.</source>
        <translation>有运行正在进行：请先停止它，再跟随另一个运行。</translation>
    </message>
    <message>
        <source>Cannot follow %1: %2</source>
        <translation>无法跟随 %1：%2</translation>
    </message>
    <message>
        <source>Cannot follow %1: give the file a job&apos;s `train --json` output goes to.</source>
        <translation>无法跟随 %1：请指定作业的 `train --json` 输出所写入的文件。</translation>
    </message>
    <message>
        <source>another process</source>
        <translation>另一个进程</translation>
    </message>
    <message>
        <source>Run %1 - followed: %2</source>
        <translation>运行 %1 - 跟随：%2</translation>
    </message>
    <message>
        <source>Following %1: the events of a run in another process, read as they are written. Stop stops following; the run goes on.</source>
        <translation>正在跟随 %1：另一个进程中运行的事件，随写随读。“停止”只停止跟随；该运行继续进行。</translation>
    </message>
    <message>
        <source>No new events from %1 for %2 s: the run may have ended without saying so (killed), or be paused. Stop stops following.</source>
        <translation>%1 已有 %2 秒没有新事件：该运行可能已在未告知的情况下结束（被终止），或已暂停。“停止”将停止跟随。</translation>
    </message>
    <message>
        <source>followed until stopped</source>
        <translation>跟随至停止</translation>
    </message>
    <message>
        <source>A run is in progress: stop it before starting another.</source>
        <translation>有运行正在进行：请先停止它，再开始另一个。</translation>
    </message>
    <message>
        <source>A job needs at least one worker.</source>
        <translation>作业至少需要一个工作进程。</translation>
    </message>
    <message>
        <source>mpirun was not found: install Open MPI (apt-get install openmpi-bin; the set-up script packaging/mirrorlab.sh installs it) to train on several workers.</source>
        <translation>未找到 mpirun：要在多个工作进程上训练，请安装 Open MPI（apt-get install openmpi-bin；安装脚本 packaging/mirrorlab.sh 会安装它）。</translation>
    </message>
    <message>
        <source>mirrorlab-cli was not found next to this program or on PATH: the workers run it.</source>
        <translation>在本程序旁边或 PATH 中未找到 mirrorlab-cli：工作进程需要运行它。</translation>
    </message>
    <message>
        <source>The workers load the data themselves, by name: load it from a file or a built-in set in the Data panel.</source>
        <translation>工作进程按名称自行加载数据：请在“数据”面板中从文件或内置数据集加载。</translation>
    </message>
    <message>
        <source>This model&apos;s weights were imported into this window; the workers would start from fresh weights. Train it here, or export it and train it with mirrorlab-cli.</source>
        <translation>此模型的权重是导入到本窗口的；工作进程会从新的权重开始。请在此训练，或将其导出后用 mirrorlab-cli 训练。</translation>
    </message>
    <message>
        <source>Cannot write the job&apos;s files to %1.</source>
        <translation>无法将作业文件写入 %1。</translation>
    </message>
    <message>
        <source>Run %1 - %2 workers x %3 - %4</source>
        <translation>运行 %1 - %2 个工作进程 x %3 - %4</translation>
    </message>
    <message>
        <source>%1 workers x %2</source>
        <translation>%1 个工作进程 x %2</translation>
    </message>
    <message>
        <source>mpirun did not start: %1</source>
        <translation>mpirun 未能启动：%1</translation>
    </message>
    <message>
        <source>Stopped: mpirun ended the workers after their step; the epochs finished so far are kept in the run store.</source>
        <translation>已停止：mpirun 在各工作进程完成当前步骤后将其结束；已完成的轮次保存在运行存储中。</translation>
    </message>
    <message>
        <source>the job ended (mpirun exit status %1) before its run finished%2</source>
        <translation>作业在运行完成前就结束了（mpirun 退出状态 %1）%2</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <source>Training on %1 workers: %2 (Stop ends them after their step)</source>
        <translation>在 %1 个工作进程上训练：%2（“停止”会在各进程完成当前步骤后将其结束）</translation>
    </message>
    <message>
        <source>Hosts: %1</source>
        <translation>主机：%1</translation>
    </message>
    <message>
        <source>%1 workers x %2 on %3</source>
        <translation>%1 个工作进程 x %2，在 %3 上</translation>
    </message>
    <message>
        <source>Waiting for the previous job&apos;s workers to exit (at most %1 s)…</source>
        <translation>正在等待上一个作业的工作进程退出（最多 %1 秒）…</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::TrainingPanel</name>
    <message>
        <source>No run yet</source>
        <translation>尚无运行</translation>
    </message>
    <message>
        <source>Waiting for the first epoch</source>
        <translation>等待第一轮</translation>
    </message>
    <message>
        <source>The last epoch&apos;s progress line, as Keras prints it with verbose=2</source>
        <translation>最近一轮的进度行，与 Keras 在 verbose=2 时打印的相同</translation>
    </message>
    <message>
        <source>Steps</source>
        <translation>步</translation>
    </message>
    <message>
        <source>Epochs</source>
        <translation>轮</translation>
    </message>
    <message>
        <source>Steps: training curves per step (running mean within the epoch), validation at the step where its epoch ended. Epochs: one training and one validation point per epoch.</source>
        <translation>步：按步绘制训练曲线（每轮内的累计平均），验证值画在该轮结束的那一步。轮：每轮一个训练点和一个验证点。</translation>
    </message>
    <message>
        <source>Exponential moving average of the training curves; the raw curve stays visible</source>
        <translation>训练曲线的指数移动平均；原始曲线仍然可见</translation>
    </message>
    <message>
        <source>Reset zoom</source>
        <translation>重置缩放</translation>
    </message>
    <message>
        <source>Drag to zoom into a rectangle, scroll to zoom, middle button or Shift+drag to pan, right click to zoom out</source>
        <translation>拖动可放大矩形区域，滚轮缩放，中键或 Shift+拖动平移，右键缩小</translation>
    </message>
    <message>
        <source>Loss</source>
        <translation>损失</translation>
    </message>
    <message>
        <source>Accuracy</source>
        <translation>准确率</translation>
    </message>
    <message>
        <source>Top-5 accuracy</source>
        <translation>Top-5 准确率</translation>
    </message>
    <message>
        <source>X axis:</source>
        <translation>X 轴：</translation>
    </message>
    <message>
        <source>Smoothing:</source>
        <translation>平滑：</translation>
    </message>
    <message>
        <source>Same series and colours as the loss chart&apos;s legend. </source>
        <translation>序列和颜色与损失图的图例相同。</translation>
    </message>
    <message>
        <source>Step</source>
        <translation>步</translation>
    </message>
    <message>
        <source>overfitting</source>
        <translation>过拟合</translation>
    </message>
    <message>
        <source>training</source>
        <translation>训练</translation>
    </message>
    <message>
        <source>training (smoothed)</source>
        <translation>训练（平滑）</translation>
    </message>
    <message>
        <source>validation</source>
        <translation>验证</translation>
    </message>
    <message>
        <source>Running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>Epoch %1/%2: 0/%3</source>
        <translation>第 %1/%2 轮：0/%3</translation>
    </message>
    <message>
        <source>Epoch %1/%2: %3/%4 - %5 ms/step - ETA %6</source>
        <translation>第 %1/%2 轮：%3/%4 - %5 毫秒/步 - 预计剩余 %6</translation>
    </message>
    <message>
        <source>Epoch %1/%2: %3/%4 - %5 ms/step - %6</source>
        <translation>第 %1/%2 轮：%3/%4 - %5 毫秒/步 - %6</translation>
    </message>
    <message>
        <source>Epoch %1/%2</source>
        <translation>第 %1/%2 轮</translation>
    </message>
    <message>
        <source>Finished: early stopping after %1 epochs</source>
        <translation>完成：早停，共训练 %1 轮</translation>
    </message>
    <message>
        <source>Stopped after %1 complete epochs</source>
        <translation>已停止，完成了 %1 轮</translation>
    </message>
    <message>
        <source>Finished: %1 epochs</source>
        <translation>完成：%1 轮</translation>
    </message>
    <message>
        <source>Finished: 1 epoch</source>
        <translation>完成：1 轮</translation>
    </message>
    <message>
        <source>Stopped after 1 complete epoch</source>
        <translation>已停止，完成了 1 轮</translation>
    </message>
    <message>
        <source> at epoch %1, step %2</source>
        <translation>，位于第 %1 轮第 %2 步</translation>
    </message>
    <message>
        <source>Failed (%1)%2: %3</source>
        <translation>失败（%1）%2：%3</translation>
    </message>
    <message>
        <source>Paused</source>
        <translation>已暂停</translation>
    </message>
    <message>
        <source>Stopping after the current step…</source>
        <translation>当前训练步结束后停止…</translation>
    </message>
    <message>
        <source>Epoch</source>
        <translation>轮</translation>
    </message>
    <message>
        <source>run %1 training</source>
        <translation>运行 %1 训练</translation>
    </message>
    <message>
        <source>run %1 validation</source>
        <translation>运行 %1 验证</translation>
    </message>
    <message>
        <source>overfitting from epoch %1</source>
        <translation>从第 %1 轮开始过拟合</translation>
    </message>
    <message>
        <source>best epoch %1</source>
        <translation>最佳为第 %1 轮</translation>
    </message>
    <message>
        <source>early stop at epoch %1</source>
        <translation>在第 %1 轮早停</translation>
    </message>
    <message>
        <source>restored epoch %1</source>
        <translation>已恢复第 %1 轮</translation>
    </message>
    <message>
        <source>best epoch %1 (weights restored)</source>
        <translation>最佳为第 %1 轮（已恢复权重）</translation>
    </message>
    <message>
        <source>Validation loss has been rising since epoch %1 while training loss keeps falling: the model is overfitting. The best epoch so far is %2.</source>
        <translation>从第 %1 轮起验证损失一直在上升，而训练损失仍在下降：模型正在过拟合。目前最佳的是第 %2 轮。</translation>
    </message>
    <message>
        <source>Validation loss has been rising since epoch %1 while training loss keeps falling: the model is overfitting. The best epoch so far is %2. Turn on early stopping with restore best weights to keep it.</source>
        <translation>从第 %1 轮起验证损失一直在上升，而训练损失仍在下降：模型正在过拟合。目前最佳的是第 %2 轮。打开早停并勾选恢复最佳权重即可保留它。</translation>
    </message>
    <message>
        <source>Early stopping ended the run after epoch %1: %2 had not improved since epoch %3.</source>
        <translation>早停在第 %1 轮后结束了运行：%2 自第 %3 轮以来没有改善。</translation>
    </message>
    <message>
        <source>The weights were restored from epoch %1.</source>
        <translation>权重已恢复为第 %1 轮的权重。</translation>
    </message>
    <message>
        <source>The model keeps the weights of epoch %1, the last one trained; turn on restore best weights to keep epoch %2.</source>
        <translation>模型保留的是第 %1 轮（最后训练的一轮）的权重；打开恢复最佳权重即可保留第 %2 轮。</translation>
    </message>
    <message>
        <source>%1 chart</source>
        <translation>%1图表</translation>
    </message>
    <message>
        <source>Failed: %1</source>
        <translation>失败：%1</translation>
    </message>
    <message>
        <source>Interrupted after 1 complete epoch; Resume in the Runs panel goes on from there</source>
        <translation>在完成 1 轮后中断；在“运行记录”面板中点击“继续”可从该处接着训练</translation>
    </message>
    <message>
        <source>Interrupted after %1 complete epochs; Resume in the Runs panel goes on from there</source>
        <translation>在完成 %1 轮后中断；在“运行记录”面板中点击“继续”可从该处接着训练</translation>
    </message>
    <message>
        <source>Training in another process</source>
        <translation>正在另一个进程中训练</translation>
    </message>
    <message>
        <source>%1 of %2 epochs</source>
        <translation>%1 / %2 轮</translation>
    </message>
    <message>
        <source>Interrupted before its first epoch finished</source>
        <translation>在第一轮完成之前中断</translation>
    </message>
    <message>
        <source>Ended after %1 complete epochs</source>
        <translation>在完成 %1 轮后结束</translation>
    </message>
    <message>
        <source>Run %1 was deleted</source>
        <translation>运行 %1 已删除</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::TryItPanel</name>
    <message>
        <source>Newswire to classify</source>
        <translation>要分类的新闻稿</translation>
    </message>
    <message>
        <source>Paste or type a newswire; the topics update as you type</source>
        <translation>粘贴或输入一篇新闻稿；主题会随输入更新</translation>
    </message>
    <message>
        <source>Paste a newswire here…</source>
        <translation>在此粘贴新闻稿…</translation>
    </message>
    <message>
        <source>Classify</source>
        <translation>分类</translation>
    </message>
    <message>
        <source>Classify the newswire</source>
        <translation>对新闻稿分类</translation>
    </message>
    <message>
        <source>Ask the latest trained model which topics the newswire is about</source>
        <translation>询问最近训练的模型这篇新闻稿属于哪些主题</translation>
    </message>
    <message>
        <source>The newswire&apos;s words</source>
        <translation>新闻稿的词</translation>
    </message>
    <message>
        <source>The words the model read; struck-through words are not in the vocabulary</source>
        <translation>模型读到的词；带删除线的词不在词表中</translation>
    </message>
    <message>
        <source>not in the vocabulary: mapped to the OOV id</source>
        <translation>不在词表中：映射为 OOV 编号</translation>
    </message>
    <message>
        <source>Train a model first: when a run ends, its model answers here.</source>
        <translation>请先训练一个模型：运行结束后，由其模型在此作答。</translation>
    </message>
    <message>
        <source>Paste or type a newswire to see which topics the model picks.</source>
        <translation>粘贴或输入一篇新闻稿，看看模型会选哪些主题。</translation>
    </message>
    <message>
        <source>The text has no words, only punctuation: there is nothing to classify.</source>
        <translation>文本中没有词，只有标点：无可分类。</translation>
    </message>
    <message>
        <source>%1: probability %2</source>
        <translation>%1：概率 %2</translation>
    </message>
    <message>
        <source>Words: %1, all in the vocabulary.</source>
        <translation>词数：%1，全部在词表中。</translation>
    </message>
    <message>
        <source>Words: %1; not in the vocabulary: %2 (struck through).</source>
        <translation>词数：%1；不在词表中：%2（带删除线）。</translation>
    </message>
    <message>
        <source>The last run trained in another process, which keeps its model: train or resume a run here to try it.</source>
        <translation>上一次运行在另一个进程中训练，模型保存在那里：请在此处训练或继续一次运行后再试用。</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::WhatIfPanel</name>
    <message>
        <source>Link between workers</source>
        <translation>工作进程之间的链路</translation>
    </message>
    <message>
        <source>What connects the workers: latency and bandwidth of each all-reduce message</source>
        <translation>连接各工作进程的链路：每条 all-reduce 消息的延迟和带宽</translation>
    </message>
    <message>
        <source>up to </source>
        <translation>最多 </translation>
    </message>
    <message>
        <source> workers</source>
        <translation> 个工作进程</translation>
    </message>
    <message>
        <source>Most workers</source>
        <translation>最多工作进程数</translation>
    </message>
    <message>
        <source> device(s) each</source>
        <translation> 个设备/进程</translation>
    </message>
    <message>
        <source>Devices per worker</source>
        <translation>每个工作进程的设备数</translation>
    </message>
    <message>
        <source>global batch </source>
        <translation>全局批量 </translation>
    </message>
    <message>
        <source>Global batch</source>
        <translation>全局批量</translation>
    </message>
    <message>
        <source>All-reduce across workers</source>
        <translation>跨工作进程的 all-reduce</translation>
    </message>
    <message>
        <source>gather, then fold (bit-identical)</source>
        <translation>先收集，再累加（逐位一致）</translation>
    </message>
    <message>
        <source>ring</source>
        <translation>环形</translation>
    </message>
    <message>
        <source>tree</source>
        <translation>树形</translation>
    </message>
    <message>
        <source>reduce to one, broadcast</source>
        <translation>归约到一个设备，再广播</translation>
    </message>
    <message>
        <source>How the workers sum their gradients: MirrorLab&apos;s CPU workers gather every replica&apos;s gradient and fold them in one process&apos;s order; NCCL and MPI use rings and trees</source>
        <translation>各工作进程如何对梯度求和：MirrorLab 的 CPU 工作进程收集每个副本的梯度，并按单进程的顺序累加；NCCL 和 MPI 使用环形和树形算法</translation>
    </message>
    <message>
        <source>all workers on this host</source>
        <translation>所有工作进程都在本机</translation>
    </message>
    <message>
        <source>Workers share this host&apos;s cores (loopback), or each has a host of its own</source>
        <translation>工作进程共享本机的核心（回环），或各自拥有一台主机</translation>
    </message>
    <message>
        <source>Load bench results…</source>
        <translation>加载基准测试结果…</translation>
    </message>
    <message>
        <source>Calibrate from saved `mirrorlab-cli bench --json` results: one-replica runs at several batch sizes, and a run under mpirun for the measured link between workers</source>
        <translation>用保存的 `mirrorlab-cli bench --json` 结果进行校准：几种批量大小下的单副本运行，以及在 mpirun 下运行以实测工作进程之间的链路</translation>
    </message>
    <message>
        <source>Predicted steps</source>
        <translation>预测的步骤</translation>
    </message>
    <message>
        <source>Workers × devices</source>
        <translation>工作进程 × 设备</translation>
    </message>
    <message>
        <source>Batch / device</source>
        <translation>批量/设备</translation>
    </message>
    <message>
        <source>Compute ms</source>
        <translation>计算毫秒</translation>
    </message>
    <message>
        <source>All-reduce in worker ms</source>
        <translation>进程内 all-reduce 毫秒</translation>
    </message>
    <message>
        <source>Across workers ms</source>
        <translation>跨进程毫秒</translation>
    </message>
    <message>
        <source>Update + rest ms</source>
        <translation>更新及其余毫秒</translation>
    </message>
    <message>
        <source>Step ms</source>
        <translation>每步毫秒</translation>
    </message>
    <message>
        <source>Samples/s</source>
        <translation>样本/秒</translation>
    </message>
    <message>
        <source>Efficiency</source>
        <translation>效率</translation>
    </message>
    <message>
        <source>Link:</source>
        <translation>链路：</translation>
    </message>
    <message>
        <source>Across workers:</source>
        <translation>跨工作进程：</translation>
    </message>
    <message>
        <source>Cannot open %1: %2</source>
        <translation>无法打开 %1：%2</translation>
    </message>
    <message>
        <source>Cannot calibrate the model: %1</source>
        <translation>无法校准模型：%1</translation>
    </message>
    <message>
        <source>Run a scaling experiment (or load bench results) to calibrate the model: the prediction starts from what this machine measured.</source>
        <translation>请先运行一次扩展实验（或加载基准测试结果）来校准模型：预测以本机的实测结果为起点。</translation>
    </message>
    <message>
        <source>measured: %1 us + bytes / %2 GB/s</source>
        <translation>实测：%1 微秒 + 字节数 / %2 GB/s</translation>
    </message>
    <message>
        <source>Calibrated from %1: compute %2 ms + %3 ms per sample, update %4 ms, gradient %5 MB. Step = compute + all-reduce in each worker + across workers + update + rest; each all-reduce costs latency × messages + bytes ÷ bandwidth.</source>
        <translation>校准来源：%1。计算 %2 毫秒 + 每样本 %3 毫秒，更新 %4 毫秒，梯度 %5 MB。每步 = 计算 + 工作进程内 all-reduce + 跨工作进程 all-reduce + 更新 + 其余；每次 all-reduce 的代价为 延迟 × 消息数 + 字节数 ÷ 带宽。</translation>
    </message>
    <message>
        <source>Load bench results</source>
        <translation>加载基准测试结果</translation>
    </message>
    <message>
        <source>Bench results (*.json);;All files (*)</source>
        <translation>基准测试结果 (*.json);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Not loaded: %1</source>
        <translation>未加载：%1</translation>
    </message>
    <message>
        <source>Predict 1, 2, 3, 4, 6, 8, … up to this many workers</source>
        <translation>预测 1、2、3、4、6、8……直到这么多个工作进程</translation>
    </message>
    <message>
        <source>Replicas (CPU cores or GPUs) in each worker: their gradients are summed inside the worker first</source>
        <translation>每个工作进程中的副本（CPU 核心或 GPU）：它们的梯度先在进程内求和</translation>
    </message>
    <message>
        <source>Samples per step over all devices of all workers</source>
        <translation>所有工作进程的所有设备每步合计的样本数</translation>
    </message>
    <message>
        <source>One row per worker count: the predicted step split into its phases, throughput and efficiency</source>
        <translation>每种工作进程数一行：预测的每步按阶段拆分，以及吞吐量和效率</translation>
    </message>
</context>
<context>
    <name>mirrorlab::ui::WorkersDialog</name>
    <message>
        <source>Train on several workers</source>
        <translation>在多个工作进程上训练</translation>
    </message>
    <message>
        <source>Number of workers</source>
        <translation>工作进程数</translation>
    </message>
    <message>
        <source>mpirun -np: how many mirrorlab-cli processes train together</source>
        <translation>mpirun -np：多少个 mirrorlab-cli 进程一起训练</translation>
    </message>
    <message>
        <source>Hosts</source>
        <translation>主机</translation>
    </message>
    <message>
        <source>this computer only</source>
        <translation>仅本机</translation>
    </message>
    <message>
        <source>mpirun --host: host names or addresses separated by commas, each with its number of workers after a colon, this computer first (localhost:2,node2:2)</source>
        <translation>mpirun --host：以逗号分隔的主机名或地址，每个主机后加冒号和工作进程数，本机放在最前面（localhost:2,node2:2）</translation>
    </message>
    <message>
        <source>Each worker runs mirrorlab-cli with the Devices panel&apos;s configuration (%1), so the job has that many replicas per worker. Rank 0 runs on this computer: it reads the model and settings and sends them to the others, and keeps the run here. Another host needs Open MPI, ssh without a password from here, mirrorlab-cli at the same path as here, and the data at the same place (%2).</source>
        <translation>每个工作进程都以“设备”面板的配置（%1）运行 mirrorlab-cli，因此每个工作进程有相应数量的副本。Rank 0 在本机运行：它读取模型和设置并发送给其他进程，并把运行保存在本机。其他主机需要 Open MPI、从本机免密码的 ssh、与本机相同路径的 mirrorlab-cli，以及位于相同位置的数据（%2）。</translation>
    </message>
    <message>
        <source>Train</source>
        <translation>训练</translation>
    </message>
    <message>
        <source>Workers:</source>
        <translation>工作进程：</translation>
    </message>
    <message>
        <source>Hosts:</source>
        <translation>主机：</translation>
    </message>
    <message>
        <source>The hosts offer %1 slots for %2 workers: mpirun fills them in the order given, so the last hosts may get none. Set Workers to %1 to use every host.</source>
        <translation>这些主机提供 %1 个槽位，而工作进程为 %2 个：mpirun 按给出的顺序填充槽位，排在后面的主机可能一个也分不到。把工作进程数设为 %1 即可用上每个主机。</translation>
    </message>
    <message>
        <source>The hosts offer %1 slots for %2 workers: mpirun puts the others on hosts that are full already, where they share the cores.</source>
        <translation>这些主机提供 %1 个槽位，而工作进程为 %2 个：mpirun 会把多出的进程放到已满的主机上，与其他进程共享 CPU 核心。</translation>
    </message>
</context>
</TS>
