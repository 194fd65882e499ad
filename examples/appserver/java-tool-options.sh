# jlive for any JVM started from this shell (or a start-up script that sources this file):
# every java command reads JAVA_TOOL_OPTIONS and prints "Picked up JAVA_TOOL_OPTIONS: ..."
# on stderr. Each JVM writes its own trace (%p = its pid) and listens on its own socket.
export JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:+$JAVA_TOOL_OPTIONS }-agentpath:/opt/jlive/libjlive.so=start=paused,file=/tmp/jlive-%p-%n.trc"
