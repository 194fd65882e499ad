package com.ibm.uvm.instrumenting;

/** Reports an error of a tracing call (VA/Java's image-level API). */
public class InstrumentVMException extends Exception {
    private static final long serialVersionUID = 1L;

    public InstrumentVMException(String message) {
        super(message);
    }
}
