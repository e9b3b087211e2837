package main

import (
	"bufio"
	"os"
	"os/exec"
)

// fakePrompt imitates the prompt box of a coding assistant in a tmux pane,
// for the scripts: it shows "> ", echoes what is typed, and takes the line
// on Enter, saying "you said: <line>" and showing a new prompt. Backspace
// and Ctrl-U edit the line; Ctrl-C ends it. With the argument "swallow" it
// ignores Enter, as a prompt that has not finished drawing may; with
// "newline" it takes Enter as a new line of the box, as Codex and Gemini
// CLI do with an Enter typed right after the text: the cursor goes to an
// empty line below it and nothing is sent.
func fakePrompt() {
	mode := ""
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	stty := exec.Command("stty", "raw", "-echo")
	stty.Stdin = os.Stdin
	if err := stty.Run(); err != nil {
		os.Exit(1)
	}
	out := bufio.NewWriter(os.Stdout)
	in := bufio.NewReader(os.Stdin)
	var line []byte
	out.WriteString("> ")
	out.Flush()
	for {
		c, err := in.ReadByte()
		if err != nil || c == 3 {
			return
		}
		switch {
		case c == '\r' || c == '\n':
			switch mode {
			case "swallow":
			case "newline":
				out.WriteString("\r\n")
				line = append(line, '\n')
			default:
				out.WriteString("\r\nyou said: " + string(line) + "\r\n> ")
				line = line[:0]
			}
		case c == 0x7f || c == 8:
			if len(line) > 0 {
				line = line[:len(line)-1]
				out.WriteString("\b \b")
			}
		case c == 0x15:
			line = line[:0]
			out.WriteString("\r\x1b[K> ")
		case c >= 0x20:
			line = append(line, c)
			out.WriteByte(c)
		}
		out.Flush()
	}
}
