# jlive drop-in for Apache Tomcat: copy to $CATALINA_BASE/bin/setenv.sh (Debian's tomcat10:
# /var/lib/tomcat10/bin/setenv.sh, or /usr/share/tomcat10/bin/setenv.sh for every base).
# catalina.sh sources this file before it starts the JVM.
#
# Tomcat starts untraced (start=paused); take a burst while it serves:
#   jlive ctl --pid "$(pgrep -f org.apache.catalina.startup.Bootstrap)" start
#   sleep 5; jlive ctl --pid ... stop
#
# CATALINA_OPTS (not JAVA_OPTS) so that only the server JVM loads the agent, not the
# short-lived JVM that `catalina.sh stop` starts.
JLIVE_LIB="${JLIVE_LIB:-/opt/jlive/libjlive.so}"
JLIVE_OPTIONS="${JLIVE_OPTIONS:-start=paused,file=${CATALINA_BASE:-/tmp}/logs/jlive-%p-%n.trc}"
if [ -r "$JLIVE_LIB" ]; then
    CATALINA_OPTS="$CATALINA_OPTS -agentpath:$JLIVE_LIB=$JLIVE_OPTIONS"
fi
