// The corrected sentences saved as a file (the answer's partial_labels, CoNLL lines
// with "?" where nobody looked), and the command that continues training on them.

export function saveText(name, text) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([text], {type: "text/plain;charset=utf-8"}));
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 0);
}

function quoted(word) {
  return /^[\w.,/=+:@-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

// The commands that continue training `model` (its description from GET v1/models)
// on the downloaded file added to the model's training file, TRAIN (the file is in
// its layout): the model learns the corrections and keeps what it knew. For a
// composed model, MODEL stands for the file of its top component.
export function trainCommand(model, data, file) {
  const target = model.predicts[model.predicts.length - 1];
  const init = model.kind === "single" ? model.file : "MODEL";
  const output = init.replace(/(\.model)?$/, ".corrected.model");
  return [
    `cat TRAIN ${quoted(file)} > more.txt &&`,
    "fstcrf train more.txt",
    `--columns ${quoted(data.columns.join(","))}`,
    `--target ${quoted(target)}`,
    `--init ${quoted(init)}`,
    `-o ${quoted(output)}`,
  ].join(" ");
}
