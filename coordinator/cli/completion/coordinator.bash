# bash completion for coordinator: source it, or put it in
# /etc/bash_completion.d/ (coordinator completion bash > ...). Needs no
# bash-completion package. After urfave/cli v2's bash_autocomplete (MIT).

_coordinator_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}" opts
  local words=("${COMP_WORDS[@]:0:COMP_CWORD}")
  if [[ "$cur" == "-"* ]]; then
    # "-" asks for the flags; a bare "--" would end them instead.
    opts=$("${words[@]}" - --generate-bash-completion 2>/dev/null)
  else
    opts=$("${words[@]}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
}

complete -o bashdefault -o default -F _coordinator_complete coordinator bin/coordinator ./bin/coordinator
